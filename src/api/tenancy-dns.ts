/** Tailnet `spec.tenancy.dns` (src/kinds/shared/dns-tenancy.ts): which namespaces publish flat DNS names. */
// A plain object type (not schemas/common.ts's Schema): schemas/tailnet.ts imports this file.
type Schema = Record<string, unknown>;

const DNS1123_LABEL = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$";

export const tenancyDnsSchema: Schema = {
  type: "object",
  description:
    "Who may publish which TailnetIngress DNS names. A name a Headscale node holds is never published, whatever this says.",
  properties: {
    flatNamespaces: {
      type: "array",
      items: { type: "string", pattern: DNS1123_LABEL },
      maxItems: 1024,
      description:
        "Namespaces whose ingresses publish flat names (<host>.<baseDomain>, first come first served). Every other namespace publishes under its own subtree, <host>.<namespace>.<baseDomain>, which no other namespace can publish in. Unset: every namespace is flat.",
    },
  },
};
