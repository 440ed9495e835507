/**
 * TailnetUser: per condition (status order), its reasons (page order) and their statuses — exactly what
 * decideUser produces, and the "not evaluated" pairs of invalidSpecResult. Ready repeats the reason of the
 * first blocking condition (UserPresent); a profile that differs is reported, never blocking.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { notEvaluated, notEvaluatedReady } from "./shared.js";

export const USER_REASONS = {
  UserPresent: {
    Created: ["True"],
    Adopted: ["True"],
    ProviderManaged: ["True"],
    Ambiguous: ["False"],
    CreateFailed: ["False"],
    NotObserved: ["Unknown"],
    ...notEvaluated("NoTailnet", "NoAPIKey", "InvalidSpec"),
  },
  ProfileMatches: {
    Matches: ["True"],
    Differs: ["False"],
    NotObserved: ["Unknown"],
    ...notEvaluated("NoTailnet", "NoAPIKey", "InvalidSpec"),
  },
  Ready: {
    Ready: ["True"],
    ...notEvaluatedReady("NoTailnet", "NoAPIKey", "InvalidSpec"),
    NotObserved: ["False"],
    Ambiguous: ["False"],
    CreateFailed: ["False"],
  },
} as const satisfies ReasonTable;

export const UserCondition = conditionNames(USER_REASONS);
export const UserReason = reasonNames(USER_REASONS);
