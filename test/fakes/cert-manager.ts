/**
 * A stand-in for cert-manager's controller in the emulator tests: it does to each Certificate in the store what
 * cert-manager does once an issuer signs (cert-manager/cert-manager pkg/controller/certificates/issuing): the
 * Secret `spec.secretName` of type kubernetes.io/tls with the pair for `spec.dnsNames` (here from the test PKI),
 * and the status — Ready True with notBefore/notAfter/renewalTime (two thirds into the validity, cert-manager's
 * default), or for a failing issuer Issuing False/Failed with lastFailureTime and no Secret. The real controller
 * runs in test/real/cert-manager.test.ts.
 */
import type { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import type { TestPki } from "./agent/pki.js";

const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, "Z");

export interface IssueOptions {
  /** Certificates (by name) whose issuance fails with this message. */
  fail?: Record<string, string>;
  notBefore?: Date;
  notAfter?: Date;
  /** When the failure is recorded (lastFailureTime). */
  now?: Date;
}

/** Issues every Certificate of the store that is not Ready for its current spec; returns the names issued. */
export async function issueCertificates(mc: MetacontrollerLoop, pki: TestPki, o: IssueOptions = {}): Promise<string[]> {
  const issued: string[] = [];
  for (const cert of mc.list("Certificate")) {
    const spec = cert.spec as { secretName: string; dnsNames: string[] };
    const name = cert.metadata.name;
    const ns = cert.metadata.namespace;
    const generation = cert.metadata.generation ?? 1;
    const message = o.fail?.[name];
    if (message) {
      mc.apply({
        ...cert,
        status: {
          conditions: [
            {
              type: "Ready",
              status: "False",
              reason: "DoesNotExist",
              message: "Issuing certificate as Secret does not exist",
              observedGeneration: generation,
            },
            { type: "Issuing", status: "False", reason: "Failed", message, observedGeneration: generation },
          ],
          lastFailureTime: iso(o.now ?? new Date()),
          failedIssuanceAttempts: 1,
        },
      } as Obj);
      continue;
    }
    const ready = (
      cert.status as { conditions?: { type: string; status: string; observedGeneration?: number }[] } | undefined
    )?.conditions?.find((c) => c.type === "Ready");
    const secret = mc.get("v1", "Secret", spec.secretName, ns);
    if (ready?.status === "True" && ready.observedGeneration === generation && secret) continue;
    const notBefore = o.notBefore ?? new Date(Date.now() - 3600_000);
    const notAfter = o.notAfter ?? new Date(Date.now() + 90 * 86400_000);
    const pair = await pki.issue({ names: spec.dnsNames, notBefore, notAfter });
    mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: spec.secretName,
        ...(ns ? { namespace: ns } : {}),
        annotations: { "cert-manager.io/certificate-name": name },
      },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": Buffer.from(pair.certPem).toString("base64"),
        "tls.key": Buffer.from(pair.keyPem).toString("base64"),
        "ca.crt": Buffer.from(pki.caPem).toString("base64"),
      },
    } as Obj);
    const renewal = new Date(notBefore.getTime() + ((notAfter.getTime() - notBefore.getTime()) * 2) / 3);
    mc.apply({
      ...cert,
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "Ready",
            message: "Certificate is up to date and has not expired",
            observedGeneration: generation,
          },
        ],
        notBefore: iso(notBefore),
        notAfter: iso(notAfter),
        renewalTime: iso(renewal),
        revision: 1,
      },
    } as Obj);
    issued.push(name);
  }
  return issued;
}
