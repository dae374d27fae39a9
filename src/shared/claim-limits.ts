// The bounds of a claim (docs/api-reference.md 12): how long its link lives and how many phones it enrols.

/** Seconds: 15 minutes to 30 days, 7 days by default. */
export const CLAIM_EXPIRES_IN = { min: 900, max: 2_592_000, default: 604_800 } as const;
/** Phones per claim: 1 to 5, one by default. */
export const CLAIM_MAX_DEVICES = { min: 1, max: 5, default: 1 } as const;
