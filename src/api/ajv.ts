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
 * The CRDs' CEL rules, judged by their TypeScript twins (src/api/cel.ts): the first failing rule is the error,
 * with the twin's words (`params.field` the field below the rule's node it names, if any). A rule without a
 * twin throws when the schema compiles.
 */
function addCelRules(ajv: Ajv): Ajv {
  return ajv.addKeyword({
    keyword: "x-kubernetes-validations",
    schemaType: "array",
    errors: true,
    compile(rules: CelRule[]) {
      const checks = rules.map((r) => ({ ...r, check: twinOf(r.rule) }));
      const validate: ReturnType<NonNullable<FuncKeywordDefinition["compile"]>> = (data: unknown) => {
        for (const c of checks) {
          const problem = c.check(data);
          if (!problem) continue;
          const message = problem.message ?? c.message;
          validate.errors = [
            { keyword: "x-kubernetes-validations", message, params: { rule: c.rule, field: problem.field } },
          ];
          return false;
        }
        validate.errors = [];
        return true;
      };
      return validate;
    },
  });
}

export function newAjv(opts: Options = {}): Ajv {
  return addCelRules(addFormats(new Ajv(opts)));
}
