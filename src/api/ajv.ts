/**
 * Every Ajv the project builds knows the OpenAPI formats our CRD schemas use (`date-time`, `int64`…):
 * without ajv-formats Ajv ignores them with one "unknown format … ignored" warning per schema path, and
 * a `lastTransitionTime: "yesterday"` would pass where the kube-apiserver refuses it.
 */
import { Ajv, type Options } from "ajv";
import addFormatsPlugin from "ajv-formats";

// ajv-formats is CommonJS (`module.exports = formatsPlugin`, plus `.default`): under nodenext the default
// import is typed as the module object, at run time it is the plugin function.
const addFormats = ((addFormatsPlugin as unknown as { default?: unknown }).default ?? addFormatsPlugin) as (
  ajv: Ajv,
) => Ajv;

export function newAjv(opts: Options = {}): Ajv {
  return addFormats(new Ajv(opts));
}
