// The service's commands and channels (docs/service-overview.md 2.1, 2.2, 9): checked by services/vocabulary.ts, listed by the schemas.

/** Commands a ticket may permit (docs/service-overview.md 2.2). */
export const COMMANDS = ['tokn', 'open', 'clos'] as const;

/** Channels in service. `nfccard` was removed on 01.02.2018 (docs/service-overview.md 9) and is accepted only where revived. */
export const CHANNELS = ['btlespp'] as const;
export const REMOVED_NFC_CHANNEL = 'nfccard';
