// Commands and channels (docs/service-overview.md 2.1, 2.2, 9) as the ticket and permission checks name them, without an app.
import { describe, expect, it } from 'vitest';
import { channelErrors, commandErrors, parseRevivedInterfaces } from '../../../src/shared/vocabulary.js';

describe('commandErrors', () => {
  it('accepts the commands of the service overview and names each unknown one with its index and the allowed list', () => {
    expect(commandErrors('commands', ['tokn', 'open', 'clos'])).toEqual([]);
    expect(commandErrors('commands', ['open', 'unlock'])).toEqual([
      { field: 'commands[1]', message: 'unknown command unlock; allowed: tokn, open, clos' },
    ]);
  });

  it('refuses an empty list', () => {
    expect(commandErrors('commands', [])).toEqual([{ field: 'commands', message: 'must name at least one command' }]);
  });
});

describe('channelErrors', () => {
  const none = parseRevivedInterfaces('');

  it('accepts btlespp, names unknown channels, and refuses an empty list', () => {
    expect(channelErrors('channels', ['btlespp'], none)).toEqual([]);
    expect(channelErrors('channels', ['wifi'], none)).toEqual([
      { field: 'channels[0]', message: 'unknown channel wifi; supported: btlespp' },
    ]);
    expect(channelErrors('channels', [], none)).toEqual([{ field: 'channels', message: 'must name at least one channel' }]);
  });

  it('refuses nfccard with its removal date and successor, unless an operator revived it', () => {
    const [error] = channelErrors('channels', ['btlespp', 'nfccard'], none);
    expect(error?.field).toBe('channels[1]');
    expect(error?.message).toBe('Channel nfccard was removed on 01.02.2018. Use channel btlespp instead.');
    expect(channelErrors('channels', ['nfccard'], parseRevivedInterfaces('nfccard-channel'))).toEqual([]);
  });
});

describe('parseRevivedInterfaces', () => {
  it('reads a comma-separated list, trimming blanks', () => {
    expect([...parseRevivedInterfaces(' nfccard-channel , ,basic-auth ')]).toEqual(['nfccard-channel', 'basic-auth']);
    expect(parseRevivedInterfaces('').size).toBe(0);
  });
});
