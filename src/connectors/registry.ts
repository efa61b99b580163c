import { z } from 'zod'
import api from './api.ts'
import database from './database.ts'
import fhir from './fhir.ts'
import file, { csvConnector, excelConnector, jsonConnector } from './file.ts'
import { type Connector, ConnectorError, defineConnector } from './types.ts'
import webhook from './webhook.ts'

/**
 * Every data source type the API knows (CONTRACT: DataSource; csv/json/excel are file formats).
 * `import` sources are made by `POST /api/panels/{id}/import` only (docs/import-export.md).
 */
export const DATA_SOURCE_TYPES = ['database', 'api', 'file', 'webhook', 'csv', 'json', 'excel', 'fhir', 'import'] as const
export type DataSourceType = (typeof DATA_SOURCE_TYPES)[number]

export const IMPORT_ONLY_MESSAGE =
  'import data sources are filled by POST /api/panels/{panelId}/import; they cannot be created, configured or synchronised by hand'

/**
 * Type → connector. A type without an entry is accepted and stored, and its syncs end in an honest
 * error, never in success. Adding a connector is one line here.
 */
const CONNECTORS: Partial<Record<DataSourceType, Connector>> = {
  api,
  database,
  file,
  csv: csvConnector,
  json: jsonConnector,
  excel: excelConnector,
  fhir,
  webhook,
  import: defineConnector({
    type: 'import',
    // No config a user can send is valid, so an import source is never created, reconfigured or
    // synchronised by hand: those answer 400, and a sync ends with this message, never a success.
    configSchema: z.never({ error: () => IMPORT_ONLY_MESSAGE }),
    read() {
      throw new ConnectorError(IMPORT_ONLY_MESSAGE)
    },
  }),
}

export const connectorFor = (type: string): Connector | undefined => CONNECTORS[type as DataSourceType]

export const notAvailableMessage = (type: string) => `Synchronisation for '${type}' sources is not available yet in this version`
