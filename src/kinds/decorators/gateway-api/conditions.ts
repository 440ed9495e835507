/** The typed condition builders of the Gateway API's objects (src/conditions/tables/gateway-api.ts). */
import { conditionsOf, type ReasonTable, type TypedCondition } from "../../../conditions/table.js";
import {
  GATEWAY_API_GATEWAY_REASONS,
  GATEWAY_CLASS_REASONS,
  ROUTE_PARENT_REASONS,
} from "../../../conditions/tables/gateway-api.js";

/** A condition of any type of table M, its reason typed per type. */
export type AnyCondition<M extends ReasonTable> = { [T in keyof M & string]: TypedCondition<M, T> }[keyof M & string];

export const { cond: routeCond } = conditionsOf(ROUTE_PARENT_REASONS);
export type RouteParentCondition = AnyCondition<typeof ROUTE_PARENT_REASONS>;
export const { cond: gatewayCond } = conditionsOf(GATEWAY_API_GATEWAY_REASONS);
export type GatewayCondition = AnyCondition<typeof GATEWAY_API_GATEWAY_REASONS>;
export const { cond: classCond } = conditionsOf(GATEWAY_CLASS_REASONS);
export type ClassCondition = TypedCondition<typeof GATEWAY_CLASS_REASONS>;
