/** The DecoratorController kinds by hook path segment: annotated Services, Ingresses of our class. */

import { ingressClassModule } from "./ingress-class/index.js";
import type { DecoratorModule } from "./module.js";
import { decoratorModules as serviceDecorators } from "./service/index.js";

export const decoratorModules: ReadonlyMap<string, DecoratorModule> = new Map([
  ...serviceDecorators,
  [ingressClassModule.name, ingressClassModule],
]);
