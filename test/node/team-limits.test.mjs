// A team at its concurrency limit is told so quickly (429 after the queue
// wait), other teams are not affected, and ending a session frees the slot.

import assert from 'node:assert/strict';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_TEAM_CONCURRENCY: '1', TRAWLER_QUEUE_WAIT: '1s' });

const sdk = (team) => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 30_000 });

test('team concurrency: the second session of a full team is refused with 429; another team is not', async () => {
  const acme = sdk('acme');
  const globex = sdk('globex');
  const first = await within(30_000, acme.browser({ ttl: 120, activityTtl: 60 }), 'first acme session');
  let other;
  let third;
  try {
    const t0 = Date.now();
    await assert.rejects(within(15_000, acme.browser({ ttl: 120, activityTtl: 60 }), 'second acme session'), (err) => {
      assert.equal(err.status, 429, `${err.status} ${err.message}`);
      assert.match(err.message, /concurren/i);
      return true;
    });
    const waited = Date.now() - t0;
    assert.ok(waited >= 900 && waited < 8_000, `refused after the 1 s queue wait, not at once nor much later (${waited} ms)`);

    other = await within(30_000, globex.browser({ ttl: 120, activityTtl: 60 }), 'globex session while acme is full');
    assert.equal(other.success, true);

    await acme.deleteBrowser(first.id);
    third = await within(30_000, acme.browser({ ttl: 120, activityTtl: 60 }), 'acme session after deleting the first');
    assert.equal(third.success, true);
    assert.notEqual(third.id, first.id);
  } finally {
    await trawler.cleanup('acme', first.id);
    await trawler.cleanup('globex', other?.id);
    await trawler.cleanup('acme', third?.id);
  }
});
