/**
 * The plumbing every DecoratorController kind shares: its customize rules, its request in the
 * pipeline's words, and one sync through runSync answered with the decision itself (a decorator's
 * answer is labels, annotations and attachments, never an assembled status).
 */
import { type Decision, runSync, type Stages } from "../../pipeline/run.js";
import type { HookDeps, HookRequest, RelatedRule } from "../../pipeline/types.js";
import type { DecoratorRequest } from "./module.js";

/**
 * Every object of a resource, never only those the decorated object names: Metacontroller caches the
 * customize answer per uid+generation, and an annotation change bumps neither (customize/manager.go).
 */
export const relatedAll = (apiVersion: string, resource: string): RelatedRule => ({
  apiVersion,
  resource,
  labelSelector: {},
});

/** The decorator request in the pipeline's words: the decorated object is the parent, its attachments the children. */
export const asHookRequest = (req: DecoratorRequest): HookRequest => ({
  controller: req.controller,
  parent: req.object,
  children: req.attachments,
  related: req.related,
  finalizing: req.finalizing,
});

/** spec → observe → plan → act → decide for a decorated object; the decision is the answer's material. */
export function runDecorator<S, O, P, A, D extends Decision>(
  stages: Stages<S, O, P, A, D>,
  req: DecoratorRequest,
  deps: HookDeps,
): Promise<D> {
  return runSync(stages, asHookRequest(req), deps, (_req, _deps, decision) => decision);
}
