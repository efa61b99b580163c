/**
 * The document-level parts of `/openapi.json`: title, version, the description a reader of `/docs`
 * sees first (with how to get a token), and one description per tag the routes use.
 */

const DESCRIPTION = [
  'Multi-tenant service for live patient panels: panels, data sources, columns, views, change tracking and notifications.',
  '',
  '**Getting a token.** Every `/api` route except the webhook receiver needs `Authorization: Bearer <token>`: an HS256 JWT with the claims `tenantId` and `userId` (or `sub`), optionally `role: "admin"`. In development `npm start` prints a ready token for tenant `dev-tenant`, user `dev-user`; `npm run -s token -- --tenant T --user U` prints one for anyone else. Click **Authorize** and paste the token (without the word Bearer).',
  '',
  'A first worklist, from a CSV file to a published and exported view, step by step: `docs/getting-started.md` in the repository.',
].join('\n')

/** Every tag the routes use, in the order `/docs` lists them. */
export const OPENAPI_TAGS: { name: string; description: string }[] = [
  {
    name: 'Panels',
    description:
      'A panel is a live table of patients: its data sources fill it with records, its columns turn each record into a row, and its cohort rule decides which rows belong.',
  },
  {
    name: 'Data sources',
    description:
      'Where a panel gets its records: a file (csv, tsv, json, xml, xlsx), an HTTP API, a FHIR server, a database, pushed webhook events, or rows imported by `POST /panels/{panelId}/import`. Each `type` has its own `config` (see the CreateDataSource schema). Creating one runs its first synchronisation.',
  },
  {
    name: 'Webhooks',
    description:
      'The receiver of `webhook` data sources: signed events pushed by another system, authenticated by an HMAC-SHA256 signature instead of a bearer token.',
  },
  {
    name: 'Columns',
    description:
      'The columns of a panel: base columns read a value from each record (a source field or a FHIRPath), calculated columns compute one with a formula over other columns.',
  },
  {
    name: 'Views',
    description:
      "Saved ways to look at a panel's rows: filters, sorts, grouping, aggregations and visible columns. A published view is shared with the tenant under its publishConfig.",
  },
  {
    name: 'Rows',
    description:
      'The rows of a panel or of a view, paged, filtered and sorted in the database; import into a panel and export of a view.',
  },
  { name: 'Changes', description: 'The change history of panels, data sources, columns and views: who changed what, and when.' },
  {
    name: 'Notifications',
    description:
      "Notices to a view's owner when someone else's change affects the view (a sync, a column removed, rows entering or leaving).",
  },
  { name: 'Formulas', description: 'The function catalogue of calculated columns, and a check of a formula against a panel.' },
  { name: 'Audit', description: 'Who read which rows, and when: access records of row reads and exports, for tenant admins.' },
  {
    name: 'SQL on FHIR',
    description:
      'SQL-on-FHIR v2 ViewDefinitions: run one over inline resources or a data source (`$viewdefinition-run`), store them, and define a panel by one.',
  },
  {
    name: 'Events',
    description:
      'The change feed: an ordered, resumable log of events per tenant, as JSON pages or a live server-sent event stream.',
  },
  {
    name: 'Webhook subscriptions',
    description:
      "Outbound webhooks: the service posts the change feed's events to your URL, signed, in order, retried until delivered.",
  },
  {
    name: 'FHIR',
    description:
      'The FHIR R4 face under `/fhir`: patient lists as `Group`, view membership as a Subscriptions-backport topic. Answers and errors are `application/fhir+json`; errors are `OperationOutcome`.',
  },
  { name: 'Health', description: 'Liveness and readiness of the service, its database and cache. No token.' },
]

export const OPENAPI_INFO = {
  openapi: '3.0.0',
  info: { title: 'Panels API', version: '1.0.0', description: DESCRIPTION },
  tags: OPENAPI_TAGS,
}
