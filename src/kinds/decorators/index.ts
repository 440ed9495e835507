/** The DecoratorController kinds by hook path segment: annotated Services, Ingresses and Gateway API objects of our classes. */

import { gatewayApiModules } from "./gateway-api/index.js";
import { ingressClassModule } from "./ingress-class/index.js";
import type { DecoratorModule } from "./module.js";
import { decoratorModules as serviceDecorators } from "./service/index.js";

export const decoratorModules: ReadonlyMap<string, DecoratorModule> = new Map([
  ...serviceDecorators,
  [ingressClassModule.name, ingressClassModule],
  ...gatewayApiModules.map((m): [string, DecoratorModule] => [m.name, m]),
]);
