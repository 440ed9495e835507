/**
 * TailnetAuthKey: per condition (status order), its reasons (page order) and their statuses — exactly what
 * decideAuthKey produces, and the "not evaluated" pairs of invalidSpecResult. Ready repeats the reason of the
 * first blocking condition (Admitted, then Issued, then Expired); a renewal that fails while the key in the
 * Secret is still valid keeps Ready True and is told by RenewalDue (and the TailnetAuthKeyRenewalFailing alert).
 * Every Admitted=False reason also expires the keys the object minted (a withdrawn grant bounds them, issue 31).
 */
import type { ReasonTable } from "../table.js";

const NOT_EVALUATED = {
  NoTailnet: ["Unknown"],
  NoAPIKey: ["Unknown"],
  NotAdmitted: ["Unknown"],
  InvalidSpec: ["Unknown"],
} as const;

export const AUTHKEY_REASONS = {
  Admitted: {
    Granted: ["True"],
    NamespaceNotAllowed: ["False"],
    TagNotGranted: ["False"],
    UserNotAllowed: ["False"],
    UserNotFound: ["False"],
    ExpiryTooLong: ["False"],
    SecretNotOwned: ["False"],
    NoTailnet: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  Issued: { Issued: ["True"], NotIssued: ["False"], NotObserved: ["Unknown"], ...NOT_EVALUATED },
  RenewalDue: {
    NotDue: ["False"],
    Renewing: ["True"],
    RenewalFailed: ["True"],
    NotObserved: ["Unknown"],
    ...NOT_EVALUATED,
  },
  Expired: { Valid: ["False"], Expired: ["True"], NotObserved: ["Unknown"], ...NOT_EVALUATED },
  Ready: {
    Ready: ["True"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    InvalidSpec: ["False"],
    NamespaceNotAllowed: ["False"],
    TagNotGranted: ["False"],
    UserNotAllowed: ["False"],
    UserNotFound: ["False"],
    ExpiryTooLong: ["False"],
    SecretNotOwned: ["False"],
    NotObserved: ["False"],
    NotIssued: ["False"],
    Expired: ["False"],
  },
} as const satisfies ReasonTable;
