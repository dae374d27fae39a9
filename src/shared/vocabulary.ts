// The service's vocabulary of channels and commands (docs/service-overview.md 2.1, 2.2, 9), their checks, and which removed interfaces an operator revived.
import { DEPRECATIONS, removalNotice } from './deprecations.js';
import type { FieldError } from '../errors.js';

/** Commands a ticket may permit (docs/service-overview.md 2.2). */
export const COMMANDS = ['tokn', 'open', 'clos'] as const;

/** Channels in service. `nfccard` was removed on 01.02.2018 (docs/service-overview.md 9) and is accepted only where revived. */
export const CHANNELS = ['btlespp'] as const;
export const REMOVED_NFC_CHANNEL = 'nfccard';

/** Interfaces an operator keeps alive (`DEPRECATED_INTERFACES_ENABLED`), by registry key. */
export type RevivedInterfaces = ReadonlySet<string>;

export function parseRevivedInterfaces(value: string): RevivedInterfaces {
  return new Set(
    value
      .split(',')
      .map((key) => key.trim())
      .filter(Boolean),
  );
}

/** Field errors for channels outside the vocabulary; `nfccard` names its removal (docs/api-reference.md 4.3). */
export function channelErrors(field: string, channels: string[], revived: RevivedInterfaces): FieldError[] {
  const errors: FieldError[] = [];
  if (channels.length === 0) errors.push({ field, message: 'must name at least one channel' });
  channels.forEach((channel, index) => {
    if ((CHANNELS as readonly string[]).includes(channel)) return;
    if (channel === REMOVED_NFC_CHANNEL) {
      if (revived.has(DEPRECATIONS.nfcCardChannel.key)) return;
      errors.push({ field: `${field}[${index}]`, message: removalNotice(DEPRECATIONS.nfcCardChannel) });
      return;
    }
    errors.push({ field: `${field}[${index}]`, message: `unknown channel ${channel}; supported: ${CHANNELS.join(', ')}` });
  });
  return errors;
}

export function commandErrors(field: string, commands: string[]): FieldError[] {
  const errors: FieldError[] = [];
  if (commands.length === 0) errors.push({ field, message: 'must name at least one command' });
  commands.forEach((command, index) => {
    if (!(COMMANDS as readonly string[]).includes(command)) {
      errors.push({ field: `${field}[${index}]`, message: `unknown command ${command}; allowed: ${COMMANDS.join(', ')}` });
    }
  });
  return errors;
}
