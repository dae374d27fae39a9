// Every benchmark scenario, in the order they run: add a file in bench/scenarios/ and list its array here.
import { baseScaleRuns, type ScaleRun } from '../scale.js';
import type { Comparison, MicroBenchmark, Scenario } from '../types.js';
import { accessLogScaleRuns } from './access-log.js';
import { claimScaleRuns } from './claim.js';
import { consoleScaleRuns } from './console.js';
import { bulkImportScaleRuns } from './bulk-import.js';
import { credentialsAtRestBenchmarks } from './credentials-at-rest.js';
import { doorBenchmarks } from './door.js';
import { erasureScaleRuns } from './erasure.js';
import { heldSyncScaleRuns } from './held-sync.js';
import { doorAccessComparisons, doorAccessScaleRuns, doorAccessScenarios } from './door-access.js';
import { oauthTokenComparisons, oauthTokenScenarios } from './oauth-token.js';
import { opsScenarios } from './ops.js';
import { ticketPageComparisons, ticketPageScenarios } from './ticket-pages.js';
import { lockSyncScenarios } from './lock-sync.js';
import { lockTrustScaleRuns } from './lock-trust.js';
import { propagationComparisons, propagationScenarios } from './propagation.js';
import { ticketScenarios } from './tickets.js';
import { verifyAccessTokenBenchmarks } from './verify-access-token.js';
import { webhookComparisons, webhookScaleRuns, webhookScenarios } from './webhooks.js';

export const scenarios: Scenario[] = [
  ...opsScenarios,
  ...oauthTokenScenarios,
  ...ticketScenarios,
  ...webhookScenarios,
  ...lockSyncScenarios,
  ...propagationScenarios,
  ...doorAccessScenarios,
  // Last: their set-up empties the tickets table and then fills it with a million rows.
  ...ticketPageScenarios,
];

/** p50 ratios between two rows, printed under the table when both ran. */
export const comparisons: Comparison[] = [
  ...oauthTokenComparisons,
  ...ticketPageComparisons,
  ...propagationComparisons,
  ...webhookComparisons,
  ...doorAccessComparisons,
];

/** In-process measurements, run after every row (nothing else is measured meanwhile). */
export const microBenchmarks: MicroBenchmark[] = [...verifyAccessTokenBenchmarks, ...credentialsAtRestBenchmarks, ...doorBenchmarks];

/** Large single operations (bench/scale.ts), run last, one after another, each BENCH_SCALE_RUNS times. */
export const scaleRuns: ScaleRun[] = [
  ...baseScaleRuns,
  ...lockTrustScaleRuns,
  ...accessLogScaleRuns,
  ...webhookScaleRuns,
  ...claimScaleRuns,
  ...erasureScaleRuns,
  ...heldSyncScaleRuns,
  ...bulkImportScaleRuns,
  ...doorAccessScaleRuns,
  ...consoleScaleRuns,
];
