/**
 * The Metacontroller v2 emulator for end-to-end tests: the product's own loop (src/emulator/metacontroller/loop.ts,
 * also used by `render`) plus the contract checks a real cluster would enforce — children valid
 * against the official schemas (kubernetes-models) and a status the CRD would not prune (a pruned
 * field means Metacontroller re-syncs forever).
 */
import { newAjv } from "../../src/api/ajv.js";
import { KINDS } from "../../src/api/schemas.js";
import { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { LoopOptions } from "../../src/emulator/metacontroller/types.js";
import { validateChild } from "../helpers/validate.js";

export type { HookCall } from "../../src/emulator/metacontroller/types.js";

const ajv = newAjv({ strict: false, removeAdditional: "all" });
const statusPruners = new Map(KINDS.map((k) => [k.kind, ajv.compile(k.status)]));

export type FakeMetacontrollerOptions = Omit<LoopOptions, "checkChild" | "checkStatus">;

export class FakeMetacontroller extends MetacontrollerLoop {
  constructor(opts: FakeMetacontrollerOptions) {
    super({
      ...opts,
      checkChild: validateChild,
      checkStatus: (kind, status) => {
        const pruned = structuredClone(status);
        statusPruners.get(kind)?.(pruned);
        if (JSON.stringify(pruned) !== JSON.stringify(status)) {
          throw new Error(
            `status of ${kind} has fields the CRD prunes: ${JSON.stringify(status)} vs ${JSON.stringify(pruned)}`,
          );
        }
      },
    });
  }
}
