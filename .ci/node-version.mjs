// Says which Node.js major runs CI, and warns when it is not one this project is tested on (20 and 22, with 22 the
// recommended LTS; package.json's engines asks >=20.12). Plain JavaScript: it runs before `npm ci`, with nothing
// installed. Never fails the run: a newer Node.js may well work, and the tests will say if it does not.
// Usage: node .ci/node-version.mjs [VERSION]   (VERSION defaults to the running one; tests pass another)
/* global process, URL */
import { readFileSync } from 'node:fs';

const say = (line) => process.stdout.write(`${line}\n`);

const version = (process.argv[2] ?? process.versions.node).replace(/^v/, '');
const [major, minor] = version.split('.').map(Number);
const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines?.node ?? '';
const floor = /^>=\s*(\d+)\.(\d+)/.exec(engines);

say(`Node.js ${version} (major ${major}); package.json engines: ${engines || 'none'}`);
if (floor && (major < Number(floor[1]) || (major === Number(floor[1]) && minor < Number(floor[2])))) {
  say(`WARNING: Node.js ${version} is below what package.json's engines asks (${engines}).`);
} else if (major === 22) {
  say('Node.js 22: the recommended LTS is in use (the Docker image runs it too).');
} else if (major === 20) {
  say('Node.js 20: supported (engines >=20.12), but past its end of life; Node.js 22 LTS is recommended.');
} else {
  say(`WARNING: Node.js ${major} is neither 20 nor 22, the majors this project is tested on; Node.js 22 LTS is recommended.`);
}
