export * from './references.ts'
