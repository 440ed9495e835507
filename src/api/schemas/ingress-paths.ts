/**
 * TailnetIngress spec.exposes[].paths: per-request routes of an http expose (src/agent/routes.ts). Written by
 * hand or by the Ingress class (path and backend only), and by the Gateway API class (docs/gateway-api.md):
 * a method, exact header values, weighted backends, a backend in another namespace.
 */
import {
  HEADER_NAME,
  HEADER_VALUE,
  MAX_HEADER_MATCHES,
  MAX_RULE_PATH,
  MAX_RULES,
  MAX_WEIGHT,
  MAX_WEIGHTED,
  RULE_METHODS,
} from "../../contract/paths.js";
import { ONE_BACKEND_FORM } from "../cel.js";
import { arr, DNS1035_PATTERN, int, obj, port, type Schema, str } from "./common.js";

/** How the agent speaks to a backend (src/contract/agent-config.ts BackendProtocol; docs/http2.md). */
export const backendProtocol = str({
  enum: ["http1", "h2c"],
  description:
    "http only: how the agent speaks to this backend. http1 (default): HTTP/1.1, HTTP/2 clients translated; h2c: HTTP/2 without TLS (gRPC servers, a GRPCRoute's backends). TLS to the backend (h2) is not offered.",
});

const service = str({ pattern: DNS1035_PATTERN, description: "A Service name." });
export const backendNamespace = str({
  pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
  description:
    "The Service's namespace; default this one. Another namespace's Service is served only with its consent: a ReferenceGrant there from TailnetIngress in this namespace to that Service, or (written by the Gateway API class) the route below; else the expose is not served, BackendsReachable False/BackendNotPermitted (docs/security.md).",
});

/** The route a backend comes from (the Gateway API class writes it): ingress/permitted.ts checks it against the cluster. */
export const backendRoute = obj(
  {
    kind: str({ enum: ["HTTPRoute", "GRPCRoute"], description: "The route's kind (gateway.networking.k8s.io)." }),
    namespace: str({ pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", description: "The route's namespace." }),
    name: str({ minLength: 1, maxLength: 253, description: "The route's name." }),
  },
  ["kind", "namespace", "name"],
  {
    description:
      "Written by the Gateway API class for a backend in another namespace: the route that names it. Served only while that route names this ingress's Gateway as a parent and this Service and port as a backendRef, with the ReferenceGrant the Gateway API requires for it.",
  },
);

/** A Service port a path's requests go to, and how the agent speaks to it. */
const serviceBackend = (description: string): Schema =>
  obj(
    {
      service,
      namespace: backendNamespace,
      port: { ...port, description: "The Service's port." },
      protocol: backendProtocol,
      route: backendRoute,
    },
    ["service", "port"],
    { description },
  );

export const exposePaths: Schema = arr(
  obj(
    {
      path: str({
        minLength: 1,
        maxLength: MAX_RULE_PATH,
        pattern: "^/",
        description:
          "Matched on the raw request path (before ?), case-sensitive, never decoded; no empty, . or .. segments, no % ; ? # \\ (docs/ingress-class.md, Paths).",
      }),
      pathType: str({
        enum: ["Exact", "Prefix"],
        description:
          "Exact: the path byte for byte; Prefix: by path element (/foo matches /foo, /foo/ and /foo/bar, not /foobar; a trailing slash is ignored). The longest matching path wins, Exact before Prefix at the same length.",
      }),
      method: str({
        enum: [...RULE_METHODS],
        description: "Only requests with this method; at the same path a rule with a method wins.",
      }),
      headers: arr(
        obj(
          {
            name: str({ pattern: HEADER_NAME, description: "Header name, case-insensitive." }),
            value: str({
              pattern: HEADER_VALUE,
              description: "The exact value (a repeated header: its values joined with ', ').",
            }),
          },
          ["name", "value"],
        ),
        {
          maxItems: MAX_HEADER_MATCHES,
          description: "Only requests with each header at exactly its value; more headers win.",
        },
      ),
      backend: serviceBackend("Where requests matching the path go (or backends)."),
      backends: arr(
        obj(
          {
            backend: serviceBackend("The Service; absent: an unresolved reference, whose share is answered 500."),
            weight: int({ minimum: 0, maximum: MAX_WEIGHT, description: "Share of the requests; 0: none." }),
          },
          ["weight"],
          // The Service sits in `backend`, not beside `weight`: an item with `port` would be merged by port
          // in Metacontroller's in-place apply (pkg/dynamic/apply/apply.go knownMergeKeys), collapsing two
          // backends on one port into one.
          { description: "One weighted backend." },
        ),
        { minItems: 1, maxItems: MAX_WEIGHTED, description: "Requests split by weight (instead of backend)." },
      ),
      name: str({
        pattern: DNS1035_PATTERN,
        maxLength: 63,
        description:
          "Optional, unique in the expose: paths sharing a path (other methods or headers) need one, since Metacontroller's in-place apply merges list items by name, else by path.",
      }),
    },
    ["path", "pathType"],
    {
      description: "One route: requests whose path (and method, headers) match go to its backend.",
      "x-kubernetes-validations": [ONE_BACKEND_FORM],
    },
  ),
  {
    maxItems: MAX_RULES,
    description:
      "http only: per-request routes by path, Kubernetes Ingress semantics; a request no path matches goes to backend (or 404, unmatched: notFound).",
  },
);
