// Peer for bench/adaptive: got (its default retry, which honours
// Retry-After on 429, up to 5 retries) behind Bottleneck at N concurrent
// with no minTime, as its README suggests for rate-limited APIs.
// Usage: node got_client.mjs URLFILE N. Prints one status per URL (0 for an
// exception).
import { readFileSync } from 'node:fs';
import Bottleneck from 'bottleneck';
import got from 'got';

const urls = readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
const limiter = new Bottleneck({ maxConcurrent: Number(process.argv[3]) });
const get = (u) =>
  got(u, { retry: { limit: 5 }, throwHttpErrors: false, timeout: { request: 30000 } })
    .then((r) => r.statusCode)
    .catch(() => 0);
const statuses = await Promise.all(urls.map((u) => limiter.schedule(() => get(u))));
process.stdout.write(statuses.join('\n') + '\n');
