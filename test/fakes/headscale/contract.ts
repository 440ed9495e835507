/**
 * Holds the fake to Headscale's published contract: every JSON body the fake sends is validated against the
 * response schema of the matched path + method in the Swagger document Headscale generates (0.29, or 0.28 in
 * 0.28 mode): `juanfont/headscale gen/openapiv2/headscale/v1/headscale.swagger.json` of the pinned release
 * (src/real-versions.json) or of v0.28.0, from the Go module cache (test/helpers/upstream.ts).
 *
 * Swagger 2 cannot say what grpc-gateway's marshaler actually does, so the schemas are tightened to it
 * (NOTES.md §0, `EmitUnpopulated: true`): every declared field is required, undeclared fields are refused, and
 * only message-typed fields and timestamps may be `null`.
 */

import { readFileSync } from "node:fs";
import { Ajv, type ValidateFunction } from "ajv";
import { headscalePin, headscaleSwaggerPath } from "../../helpers/upstream.js";
import type { FakeVersion } from "./policy.js";

type Schema = Record<string, unknown>;

interface SwaggerOperation {
  responses: Record<string, { schema?: Schema }>;
}

interface SwaggerDocument {
  paths: Record<string, Record<string, SwaggerOperation>>;
  definitions: Record<string, Schema>;
}

/** The Headscale release whose Swagger document holds the fake in each mode: 0.29 is the pin the real tests run. */
export function swaggerRelease(version: FakeVersion): string {
  return version === "0.29" ? headscalePin() : "v0.28.0";
}

export function swaggerPath(version: FakeVersion): string {
  return headscaleSwaggerPath(swaggerRelease(version));
}

export interface Contract {
  /** Swagger path templates with their lower-case methods, e.g. ["/api/v1/node/{nodeId}", "delete"]. */
  operations: Array<[string, string]>;
  /** Null when `body` is what the document allows for this operation and status, else a description. */
  check(method: string, template: string | null, status: number, body: unknown): string | null;
}

const cache = new Map<FakeVersion, Contract>();

export function loadContract(version: FakeVersion): Contract {
  let contract = cache.get(version);
  if (!contract) {
    contract = buildContract(JSON.parse(readFileSync(swaggerPath(version), "utf8")) as SwaggerDocument);
    cache.set(version, contract);
  }
  return contract;
}

function buildContract(doc: SwaggerDocument): Contract {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat("uint64", /^\d+$/);
  ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31 });
  ajv.addFormat("date-time", /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/);
  ajv.addSchema({ $id: "headscale", definitions: tightenDefinitions(doc.definitions) });

  const compiled = new Map<string, ValidateFunction>();
  const validatorFor = (ref: string): ValidateFunction => {
    let fn = compiled.get(ref);
    if (!fn) {
      fn = ajv.compile({ $ref: `headscale${ref}` });
      compiled.set(ref, fn);
    }
    return fn;
  };
  const errorRef = "#/definitions/rpcStatus";
  const operations: Array<[string, string]> = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const method of Object.keys(item)) operations.push([path, method]);

  return {
    operations,
    check(method, template, status, body) {
      let ref = errorRef;
      if (template !== null) {
        const op = doc.paths[template]?.[method.toLowerCase()];
        if (!op) return `${method} ${template} is not in the Swagger document`;
        const response = status === 200 ? op.responses["200"] : op.responses.default;
        const schemaRef = response?.schema?.$ref;
        if (typeof schemaRef !== "string") return `${method} ${template} declares no schema for status ${status}`;
        ref = schemaRef;
      } else if (status === 200) {
        return `a 200 answer for a path outside the Swagger document`;
      }
      const validate = validatorFor(ref);
      if (validate(body)) return null;
      const where = template === null ? "unrouted" : `${method} ${template}`;
      return `${where} ${status} does not match ${ref}: ${ajv.errorsText(validate.errors)}`;
    },
  };
}

function tightenDefinitions(definitions: Record<string, Schema>): Record<string, Schema> {
  const isMessage = (ref: unknown) =>
    typeof ref === "string" && definitions[ref.replace("#/definitions/", "")]?.type === "object";
  const out: Record<string, Schema> = {};
  for (const [name, def] of Object.entries(definitions)) {
    // protobufAny carries arbitrary fields by design.
    if (name === "protobufAny" || def.type !== "object") {
      out[name] = def;
      continue;
    }
    const properties = (def.properties ?? {}) as Record<string, Schema>;
    const tightened: Record<string, Schema> = {};
    for (const [prop, schema] of Object.entries(properties)) {
      if (isMessage(schema.$ref)) tightened[prop] = { anyOf: [{ $ref: schema.$ref }, { type: "null" }] };
      else if (schema.format === "date-time") tightened[prop] = { ...schema, type: ["string", "null"] };
      else tightened[prop] = schema;
    }
    out[name] = { ...def, properties: tightened, required: Object.keys(properties), additionalProperties: false };
  }
  return out;
}
