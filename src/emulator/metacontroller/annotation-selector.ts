/**
 * A DecoratorController's annotationSelector as Metacontroller evaluates it: converted to a label
 * selector over the object's annotations (pkg/controller/decorator/selector.go), so matchAnnotations
 * are exact matches and matchExpressions take In, NotIn, Exists and DoesNotExist; all must hold. No
 * selector selects everything.
 */
export interface AnnotationSelector {
  matchAnnotations?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export function selectsByAnnotations(
  sel: AnnotationSelector | undefined,
  annotations: Record<string, string>,
): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchAnnotations ?? {})) if (annotations[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(annotations, e.key);
    const value = annotations[e.key];
    const ok =
      e.operator === "Exists"
        ? has
        : e.operator === "DoesNotExist"
          ? !has
          : e.operator === "In"
            ? has && (e.values ?? []).includes(value)
            : e.operator === "NotIn"
              ? !has || !(e.values ?? []).includes(value)
              : false;
    if (!ok) return false;
  }
  return true;
}
