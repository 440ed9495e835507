/**
 * Every Ajv the project builds knows the OpenAPI formats our CRD schemas use (`date-time`, `int64`…):
 * without ajv-formats Ajv ignores them with one "unknown format … ignored" warning per schema path, and
 * a `lastTransitionTime: "yesterday"` would pass where the kube-apiserver refuses it.
 */
import { Ajv, type FuncKeywordDefinition, type Options } from "ajv";
import addFormatsPlugin from "ajv-formats";
import { type CelRule, twinOf } from "./cel.js";

// ajv-formats is CommonJS (`module.exports = formatsPlugin`, plus `.default`): under nodenext the default
// import is typed as the module object, at run time it is the plugin function.
const addFormats = ((addFormatsPlugin as unknown as { default?: unknown }).default ?? addFormatsPlugin) as (
  ajv: Ajv,
) => Ajv;

/**
 * The CRDs' CEL rules, judged by their TypeScript twins (src/api/cel.ts): the first failing rule's message
 * is the error, as the API server reports it. A rule without a twin throws when the schema compiles.
 */
function addCelRules(ajv: Ajv): Ajv {
  return ajv.addKeyword({
    keyword: "x-kubernetes-validations",
    schemaType: "array",
    errors: true,
    compile(rules: CelRule[]) {
      const checks = rules.map((r) => ({ ...r, check: twinOf(r.rule) }));
      const validate: ReturnType<NonNullable<FuncKeywordDefinition["compile"]>> = (data: unknown) => {
        const failed = checks.find((c) => !c.check(data));
        validate.errors = failed
          ? [{ keyword: "x-kubernetes-validations", message: failed.message, params: { rule: failed.rule } }]
          : [];
        return !failed;
      };
      return validate;
    },
  });
}

export function newAjv(opts: Options = {}): Ajv {
  return addCelRules(addFormats(new Ajv(opts)));
}
