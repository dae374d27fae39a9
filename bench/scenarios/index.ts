// Every benchmark scenario, in the order they run: add a file in bench/scenarios/ and list its array here.
import type { Scenario } from '../types.js';
import { opsScenarios } from './ops.js';

export const scenarios: Scenario[] = [...opsScenarios];
