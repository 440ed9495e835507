/** TailnetIngress: spec and status. */
import {
  aclEntities,
  arr,
  bool,
  commonWorkloadStatus,
  DNS1035_PATTERN,
  DNS1123_SUBDOMAIN_PATTERN,
  int,
  nodesStatus,
  obj,
  port,
  preAuthKeyIds,
  proxyClassName,
  type Schema,
  str,
  tag,
  tailnetRef,
} from "./common.js";

export const ingressSpec: Schema = obj(
  {
    tailnetRef,
    tag,
    replicas: int({
      minimum: 1,
      maximum: 16,
      default: 1,
      description: "Agent pods, each its own tailnet node; the DNS names answer with every online node's address.",
    }),
    proxyClassName,
    hostname: str({ pattern: DNS1035_PATTERN, maxLength: 63 }),
    mode: str({
      enum: ["tcp", "http", "kube-api"],
      default: "tcp",
      description:
        "tcp: raw TCP to each backend; http: TLS ends at the agent, HTTP/1.1 to each backend; kube-api: the cluster's API server, each request impersonating the connecting tailnet identity (one expose, no backend).",
    }),
    allowFrom: aclEntities("Who may connect; must be within Tailnet.spec.allowedIngressSources."),
    exposes: arr(
      obj(
        {
          name: str({ pattern: DNS1035_PATTERN, maxLength: 63 }),
          // Optional so that Metacontroller merges exposes by name (its apply guesses `port` first,
          // and http exposes share 443); no schema default, which would store it again.
          port: int({
            minimum: 1,
            maximum: 65535,
            description: "Port on the tailnet node; required in mode tcp, 443 when left out in mode http.",
          }),
          backend: obj({ service: str({ pattern: DNS1035_PATTERN }), port }, ["service", "port"]),
          host: str({ minLength: 1, maxLength: 63 }),
          aliases: arr(str({ minLength: 1, maxLength: 63 }), { maxItems: 16 }),
          tls: obj({ secretName: str({ pattern: DNS1123_SUBDOMAIN_PATTERN }) }, ["secretName"]),
        },
        // backend: required in mode tcp and http, refused in kube-api; port: required in tcp, 443 when
        // left out in http (src/kinds/shared/expose-port.ts) — both checked by ingressSpecProblem
        ["name"],
      ),
      { minItems: 1, maxItems: 32, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
    ),
  },
  ["tailnetRef", "hostname", "exposes"],
);

export const ingressStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: str(),
  preAuthKeyIds,
  dnsName: str(),
  exposes: arr(
    obj({
      name: str(),
      dnsName: str(),
      dnsAliases: arr(str()),
      reachable: bool(),
    }),
  ),
  nodes: nodesStatus,
});
