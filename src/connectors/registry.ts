import api from './api.ts'
import database from './database.ts'
import fhir from './fhir.ts'
import file, { csvConnector, excelConnector, jsonConnector } from './file.ts'
import type { Connector } from './types.ts'
import webhook from './webhook.ts'

/** Every data source type the API accepts (CONTRACT: DataSource; csv/json/excel are file formats). */
export const DATA_SOURCE_TYPES = ['database', 'api', 'file', 'webhook', 'csv', 'json', 'excel', 'fhir'] as const
export type DataSourceType = (typeof DATA_SOURCE_TYPES)[number]

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
}

export const connectorFor = (type: string): Connector | undefined => CONNECTORS[type as DataSourceType]

export const notAvailableMessage = (type: string) => `Synchronisation for '${type}' sources is not available yet in this version`
