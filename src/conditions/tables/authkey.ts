/**
 * TailnetAuthKey: per condition (status order), its reasons (page order) and their statuses — exactly what
 * decideAuthKey produces, and the "not evaluated" pairs of invalidSpecResult. Ready repeats the reason of the
 * first blocking condition (Admitted, then Issued, then Expired); a renewal that fails while the key in the
 * Secret is still valid keeps Ready True and is told by RenewalDue (and the TailnetAuthKeyRenewalFailing alert).
 * Every Admitted=False reason also expires the keys the object minted (a withdrawn grant bounds them, issue 31).
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { notEvaluated, notEvaluatedReady } from "./shared.js";

// NotAdmitted: the key's own "not evaluated" (Admitted is not True), between the shared ones in the page's order.
const NOT_EVALUATED = {
  ...notEvaluated("NoTailnet", "NoAPIKey"),
  NotAdmitted: ["Unknown"],
  ...notEvaluated("InvalidSpec"),
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
    ...notEvaluated("NoTailnet", "InvalidSpec"),
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
    ...notEvaluatedReady("NoTailnet", "NoAPIKey", "InvalidSpec", "NamespaceNotAllowed", "TagNotGranted"),
    UserNotAllowed: ["False"],
    UserNotFound: ["False"],
    ExpiryTooLong: ["False"],
    SecretNotOwned: ["False"],
    NotObserved: ["False"],
    NotIssued: ["False"],
    Expired: ["False"],
  },
} as const satisfies ReasonTable;

export const AuthKeyCondition = conditionNames(AUTHKEY_REASONS);
export const AuthKeyReason = reasonNames(AUTHKEY_REASONS);
