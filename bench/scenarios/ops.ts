// Scenarios for the operational probes: /healthz (no I/O) and /readyz (one database round trip).
import type { Scenario } from '../types.js';

export const opsScenarios: Scenario[] = [
  { name: 'GET /healthz', method: 'GET', path: '/healthz', baseline: 'hello' },
  { name: 'GET /readyz', method: 'GET', path: '/readyz', baseline: 'hello' },
];
