/** TailnetSite: per condition (status order), its reasons (page order) and their statuses. */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { notEvaluated, notEvaluatedReady } from "./shared.js";

export const SITE_REASONS = {
  RouteConflict: {
    NoConflict: ["False"],
    OverlapsReserved: ["True"],
    OverlapsSite: ["True"],
    ...notEvaluated("NoTailnet", "InvalidSpec"),
  },
  UnmanagedOverlap: { None: ["False"], Unmanaged: ["True"], NotObserved: ["Unknown"], ...notEvaluated("InvalidSpec") },
  Advertised: {
    Advertised: ["True"],
    NotAdvertised: ["False"],
    NotObserved: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
  },
  Approved: {
    Approved: ["True"],
    NotApproved: ["False"],
    LeftOutOfPolicy: ["False"],
    NotObserved: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
  },
  Ready: {
    Ready: ["True"],
    ...notEvaluatedReady("InvalidSpec", "NoTailnet", "NoAPIKey", "NamespaceNotAllowed"),
    OverlapsReserved: ["False"],
    OverlapsSite: ["False"],
    NotAdvertised: ["False"],
    NotApproved: ["False"],
    LeftOutOfPolicy: ["False"],
    NotObserved: ["False"],
    Withdrawing: ["False"],
  },
} as const satisfies ReasonTable;

export const SiteCondition = conditionNames(SITE_REASONS);
export const SiteReason = reasonNames(SITE_REASONS);
