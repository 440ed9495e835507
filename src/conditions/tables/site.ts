/** TailnetSite: per condition (status order), its reasons (page order) and their statuses. */
import type { ReasonTable } from "../table.js";

export const SITE_REASONS = {
  RouteConflict: {
    NoConflict: ["False"],
    OverlapsReserved: ["True"],
    OverlapsSite: ["True"],
    NoTailnet: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  UnmanagedOverlap: { None: ["False"], Unmanaged: ["True"], NotObserved: ["Unknown"], InvalidSpec: ["Unknown"] },
  Advertised: {
    Advertised: ["True"],
    NotAdvertised: ["False"],
    NotObserved: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  Approved: {
    Approved: ["True"],
    NotApproved: ["False"],
    LeftOutOfPolicy: ["False"],
    NotObserved: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  Ready: {
    Ready: ["True"],
    InvalidSpec: ["False"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    NamespaceNotAllowed: ["False"],
    OverlapsReserved: ["False"],
    OverlapsSite: ["False"],
    NotAdvertised: ["False"],
    NotApproved: ["False"],
    LeftOutOfPolicy: ["False"],
    NotObserved: ["False"],
    Withdrawing: ["False"],
  },
} as const satisfies ReasonTable;
