/**
 * TailnetIngress: per condition (status order), its reasons (page order) and their statuses — exactly
 * what the kind produces: decideIngress, and the "not evaluated" pairs of invalidSpecResult (every
 * condition but Ready is Unknown/InvalidSpec until a valid spec was evaluated). Ready carries its own
 * reasons and repeats the reason of the first blocking condition.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { AGENT_REGISTERED, AGENT_TAG_KNOWN } from "./agent.js";
import { NODE_IDENTITY } from "./identity.js";
import { notEvaluated, notEvaluatedReady, WORKLOAD_NOT_EVALUATED } from "./shared.js";

export const INGRESS_REASONS = {
  TagKnown: AGENT_TAG_KNOWN,
  PolicyGranted: {
    Granted: ["True"],
    PolicyDenied: ["False"],
    LeftOutOfPolicy: ["False"],
    ...notEvaluated("NoTailnet", "InvalidSpec"),
  },
  Registered: AGENT_REGISTERED,
  BackendsReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    // a backend in another namespace without that namespace's consent (ingress/permitted.ts): its expose is not served
    BackendNotPermitted: ["False"],
    GatewayAPIMissing: ["False"],
    ProbeFailed: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
  },
  TLSReady: {
    Valid: ["True"],
    TLSNotRequired: ["True"],
    TLSSecretMissing: ["False"],
    TLSSecretInvalid: ["False"],
    TLSNameMismatch: ["False"],
    TLSExpired: ["False"],
    // cert-manager (tls.issuerRef, ingress/certificate.ts): the served certificate still works, its renewal is late
    // or failing; the TailnetIngressCertificateRenewal alert fires on it
    TLSExpiring: ["True"],
    CertManagerMissing: ["False"],
    NoIssuer: ["False"],
    IssuerNotAllowed: ["False"],
    CertificatePending: ["False"],
    CertificateFailed: ["False"],
    ...notEvaluated("NoTailnet", "InvalidSpec"),
  },
  // Whether Headscale hands the published names to the agent's node (its quad-100 resolver answers them):
  // the one prerequisite Headscale's API does not show, dns.extra_records_path. Never holds Ready back.
  DNSServed: {
    Served: ["True"],
    NothingPublished: ["True"],
    NotServed: ["False"],
    ProbeFailed: ["Unknown"],
    ...WORKLOAD_NOT_EVALUATED,
  },
  NodeIdentity: NODE_IDENTITY,
  Ready: {
    Ready: ["True"],
    ...notEvaluatedReady(
      "InvalidSpec",
      "NoTailnet",
      "NoAPIKey",
      "ProxyClassMissing",
      "NamespaceNotAllowed",
      "TagNotGranted",
      "TagInUse",
    ),
    TagUnknown: ["False"],
    InvalidDNSName: ["False"],
    DNSNameReserved: ["False"],
    DNSNameConflict: ["False"],
    NotRegistered: ["False"],
    NodesOffline: ["False"],
    PolicyDenied: ["False"],
    LeftOutOfPolicy: ["False"],
    TLSSecretMissing: ["False"],
    TLSSecretInvalid: ["False"],
    TLSNameMismatch: ["False"],
    TLSExpired: ["False"],
    CertManagerMissing: ["False"],
    NoIssuer: ["False"],
    IssuerNotAllowed: ["False"],
    CertificatePending: ["False"],
    CertificateFailed: ["False"],
    BackendNotPermitted: ["False"],
    GatewayAPIMissing: ["False"],
    Unreachable: ["False"],
    ProbeFailed: ["False"],
    Unknown: ["False"],
  },
} as const satisfies ReasonTable;

export const IngressCondition = conditionNames(INGRESS_REASONS);
export const IngressReason = reasonNames(INGRESS_REASONS);
