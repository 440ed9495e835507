/** The DecoratorController kinds by hook path segment: annotated Services, Ingresses of our class. */

import type { DecoratorModule } from "./decorator.js";
import { ingressClassModule } from "./ingress-class/index.js";
import { decoratorModules as serviceDecorators } from "./service/index.js";

export const decoratorModules: ReadonlyMap<string, DecoratorModule> = new Map([
  ...serviceDecorators,
  [ingressClassModule.name, ingressClassModule],
]);
