/**
 * TailnetUser: per condition (status order), its reasons (page order) and their statuses — exactly what
 * decideUser produces, and the "not evaluated" pairs of invalidSpecResult. Ready repeats the reason of the
 * first blocking condition (UserPresent); a profile that differs is reported, never blocking.
 */
import type { ReasonTable } from "../table.js";

export const USER_REASONS = {
  UserPresent: {
    Created: ["True"],
    Adopted: ["True"],
    ProviderManaged: ["True"],
    Ambiguous: ["False"],
    CreateFailed: ["False"],
    NotObserved: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  ProfileMatches: {
    Matches: ["True"],
    Differs: ["False"],
    NotObserved: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  Ready: {
    Ready: ["True"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    InvalidSpec: ["False"],
    NotObserved: ["False"],
    Ambiguous: ["False"],
    CreateFailed: ["False"],
  },
} as const satisfies ReasonTable;
