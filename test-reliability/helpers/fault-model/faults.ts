// The fault injector: kill -9 of an instance while an operation runs (restarted a few steps later), the database frozen
// while an operation runs and thawed, the LISTEN connections cut just before a revocation and a sync, a lock's clock
// skewed within the bound a phone accepts (a hello within 60 s of its clock, docs/lock-integration.md 4.2), and a phone
// that keeps its old download for a few steps.
import { sleep } from '../server.js';
import { syncLock, runOperation, type Context } from './operations.js';
import type { Instance } from './service.js';
import { count } from './world.js';

export type FaultName = 'kill' | 'freeze' | 'cut-listen' | 'skew' | 'phone-offline';

/** The most a lock's clock is moved: inside the 60 s a phone allows a hello (and the 300 s of a credential's nbf). */
export const SKEW_BOUND_MS = 50_000;

export interface FaultState {
  /** A killed instance and the step it comes back at. */
  down?: { instance: Instance; restartAt: number };
}

/** A fault for this step, or none (most steps). At most one instance is down at a time. */
export function nextFault(ctx: Context, state: FaultState, rate: number, kills: boolean): FaultName | undefined {
  if (!ctx.random.chance(rate)) return undefined;
  const faults: FaultName[] = ['freeze', 'cut-listen', 'skew', 'phone-offline', ...(state.down || !kills ? [] : (['kill'] as const))];
  return ctx.random.pick(faults);
}

/** Brings back a killed instance once its step has come (or `now`). */
export async function restartDue(ctx: Context, state: FaultState, step: number, now = false): Promise<string | undefined> {
  if (!state.down || (!now && step < state.down.restartAt)) return undefined;
  const { instance } = state.down;
  state.down = undefined;
  await ctx.service.restart(instance);
  return `restart ${instance.name}`;
}

/** Runs `operation` under `fault`; answers what happened. */
export async function withFault(ctx: Context, state: FaultState, fault: FaultName | undefined, step: number, operation: () => Promise<string>): Promise<string> {
  if (fault === undefined) return operation();
  count(ctx.world, `fault-${fault}`);
  const { random, service, world } = ctx;
  switch (fault) {
    case 'kill': {
      // Killed while the operation is in flight: between its commit and its answer, or before either.
      const instance = random.pick(service.live());
      const running = operation();
      await sleep(random.int(150));
      await service.kill(instance);
      state.down = { instance, restartAt: step + 1 + random.int(3) };
      return `kill -9 ${instance.name}; ${await running}`;
    }
    case 'freeze': {
      const pids = service.freeze();
      let thawed = false;
      const thaw = () => {
        if (!thawed) service.thaw(pids);
        thawed = true;
      };
      try {
        const running = operation();
        await sleep(300 + random.int(1200));
        thaw();
        return `database frozen and thawed; ${await running}`;
      } finally {
        thaw();
      }
    }
    case 'cut-listen': {
      const cut = await service.cutListeners();
      // A revocation and, at once, the syncs of every online lock: what the notification would have announced.
      const revoked = await runOperation(ctx, 'revoke', step);
      for (const lock of world.locks.filter((candidate) => candidate.online)) await syncLock(ctx, lock);
      return `${cut} LISTEN sessions cut; ${revoked}; online locks synced; ${await operation()}`;
    }
    case 'skew': {
      const lock = random.pick(world.locks);
      lock.skewMs = random.int(2 * SKEW_BOUND_MS + 1) - SKEW_BOUND_MS;
      return `${lock.id} clock skewed ${lock.skewMs} ms; ${await operation()}`;
    }
    case 'phone-offline': {
      const phone = random.pick(world.phones);
      phone.offlineUntilStep = step + 3 + random.int(6);
      return `${phone.deviceId} keeps its download until step ${phone.offlineUntilStep}; ${await operation()}`;
    }
  }
}
