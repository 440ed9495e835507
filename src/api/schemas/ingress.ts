/** TailnetIngress: spec and status. */

import {
  BACKEND_REQUIRED,
  HTTP_TLS_REQUIRED,
  KUBE_API_NO_BACKEND,
  KUBE_API_ONE_EXPOSE,
  PORT_REQUIRED,
  TLS_ONE_SOURCE,
} from "../cel.js";
import {
  aclEntities,
  arr,
  bool,
  commonWorkloadStatus,
  DNS1035_PATTERN,
  DNS1123_SUBDOMAIN_PATTERN,
  effectiveTag,
  int,
  issuerRef,
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
import { backendNamespace, backendProtocol, backendRoute, exposePaths } from "./ingress-paths.js";

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
    hostname: str({
      pattern: DNS1035_PATTERN,
      maxLength: 63,
      description:
        "The agent node's tailnet name; status.dnsName is <hostname>.<baseDomain> (or <hostname>.<namespace>.<baseDomain> outside the Tailnet's spec.tenancy.dns.flatNamespaces).",
    }),
    mode: str({
      enum: ["tcp", "http", "kube-api"],
      default: "tcp",
      description:
        "tcp: raw TCP to each backend; http: TLS ends at the agent (HTTP/1.1 or HTTP/2, ALPN), HTTP/1.1 or h2c to each backend (backend.protocol); kube-api: the cluster's API server, each request impersonating the connecting tailnet identity (one expose, no backend).",
    }),
    allowFrom: aclEntities("Who may connect; must be within Tailnet.spec.allowedIngressSources."),
    exposes: arr(
      obj(
        {
          name: str({ pattern: DNS1035_PATTERN, maxLength: 63, description: "Name of the expose, unique." }),
          // Optional so that Metacontroller merges exposes by name (its apply guesses `port` first,
          // and http exposes share 443); no schema default, which would store it again.
          port: int({
            minimum: 1,
            maximum: 65535,
            description: "Port on the tailnet node; required in mode tcp, 443 when left out in mode http.",
          }),
          backend: obj(
            {
              service: str({ pattern: DNS1035_PATTERN, description: "A Service (in namespace, default this one)." }),
              namespace: backendNamespace,
              port: { ...port, description: "The Service's port." },
              protocol: backendProtocol,
              route: backendRoute,
            },
            ["service", "port"],
            { description: "Where connections go: required in modes tcp and http, refused in kube-api." },
          ),
          paths: exposePaths,
          unmatched: str({
            enum: ["backend", "notFound"],
            description:
              "http only, with paths: where a request no path matches goes — backend (default), or answered 404 (a Gateway of class tailnet).",
          }),
          host: str({
            minLength: 1,
            maxLength: 63,
            description: "http only: the DNS name <host>.<baseDomain> this expose answers; default spec.hostname.",
          }),
          aliases: arr(str({ minLength: 1, maxLength: 63 }), {
            maxItems: 16,
            description: "http only: more DNS labels for the same expose, published with the same addresses.",
          }),
          tls: obj(
            {
              secretName: str({
                pattern: DNS1123_SUBDOMAIN_PATTERN,
                description: "A kubernetes.io/tls Secret in this namespace covering host and every alias.",
              }),
              issuerRef: issuerRef(
                "A cert-manager issuer: the operator returns a Certificate for exactly the names status.exposes[] publishes, into the Secret <ingress>.<expose>-tls (needs cert-manager and the cert-manager component; a ClusterIssuer must be in the Tailnet's spec.certificates.allowedClusterIssuers).",
              ),
            },
            [],
            {
              description:
                "modes http and kube-api: the certificate the agent serves (TLSReady reports on it): secretName, issuerRef, or {} for the Tailnet's spec.certificates.issuerRef.",
              "x-kubernetes-validations": [TLS_ONE_SOURCE],
            },
          ),
        },
        // backend: required in mode tcp and http, refused in kube-api; port: required in tcp, 443 when
        // left out in http (src/kinds/shared/expose-port.ts) — both checked by ingressSpecProblem
        ["name"],
      ),
      {
        minItems: 1,
        maxItems: 32,
        description: "What the agent node serves: one item per port (mode kube-api: exactly one, without backend).",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
      },
    ),
  },
  ["tailnetRef", "hostname", "exposes"],
  {
    "x-kubernetes-validations": [
      BACKEND_REQUIRED,
      HTTP_TLS_REQUIRED,
      PORT_REQUIRED,
      KUBE_API_ONE_EXPOSE,
      KUBE_API_NO_BACKEND,
    ],
  },
);

export const ingressStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: effectiveTag,
  preAuthKeyIds,
  dnsName: str({ description: "The MagicDNS name of the agent node (spec.hostname), once published." }),
  exposes: arr(
    obj({
      name: str({ description: "spec.exposes[].name." }),
      dnsName: str({ description: "The DNS name the expose answers on." }),
      dnsAliases: arr(str(), { description: "The published aliases' DNS names." }),
      reachable: bool({ description: "Whether the agent reaches the backend." }),
    }),
    { description: "One item per expose: its names and whether its backend answers." },
  ),
  nodes: nodesStatus,
});
