import webhook from '../../src/connectors/webhook.ts'
import { AppError } from '../../src/errors.ts'
import { parseEvents } from '../../src/modules/datasources/datasources.webhooks.parse.ts'
import { testConnectorContext } from '../helpers/connectors.ts'
import { testConnector } from './contract.ts'

/**
 * The contract of the push-only `webhook` connector: its config, the records a delivery parses
 * into (keyed by `keyField`), and its messages (the refused pull, a refused delivery). Nothing is
 * read, so the signal and the sync's limits do not apply to it.
 */
const secret = 'whsec-Zq8+recognisable/secret'
const config = webhook.configSchema.parse({
  endpoint: 'ward-feed',
  events: ['data.created', 'data.deleted'],
  secret,
  batchEvents: true,
})
const delivery = (events: unknown) => new TextEncoder().encode(JSON.stringify(events))
const events = [
  {
    id: 'e1',
    event: 'data.created',
    data: [
      { id: 'p2', name: 'Grace' },
      { id: 'p1', name: 'Ada' },
    ],
  },
  { id: 'e2', event: 'data.created', data: { id: 'p3', name: 'Alan' } },
  { id: 'e3', event: 'data.deleted', data: ['p9', 7] },
]

testConnector({
  name: 'webhook',
  connector: webhook,
  config: {
    bad: {
      config: { endpoint: 'a/b', events: ['data.renamed'], signatureHeader: 'X Sig', batchEvents: 'yes' },
      fields: ['endpoint', 'events.0', 'signatureHeader', 'batchEvents', 'secret'],
    },
    missing: { config: {}, fields: ['endpoint', 'events', 'secret'] },
  },
  records: async () => parseEvents(delivery(events), config).flatMap((e) => e.records),
  keys: { field: 'id' },
  signal: { notApplicable: 'push-only: a pull reads nothing and is refused at once (see the failure messages)' },
  limits: {
    notApplicable:
      'push-only: a delivery is bounded by the webhook route (1 MiB body) before it is parsed; ctx.limits bound pulls',
  },
  failures: () => [
    {
      what: 'a pull of a push source',
      run: async () => {
        for await (const _ of webhook.read(config, testConnectorContext())) {
          // nothing is read
        }
      },
      secrets: [secret],
    },
    {
      what: 'a delivery with an event missing its key field',
      run: async () => parseEvents(delivery([{ event: 'data.created', data: { name: secret } }]), config),
      secrets: [secret],
      errorType: AppError,
    },
    {
      what: 'a delivery that is not JSON',
      run: async () => parseEvents(new TextEncoder().encode(`{"event": "${secret}`), config),
      secrets: [secret],
      errorType: AppError,
    },
  ],
})
