/**
 * Stands in, in the Workers bundle only (wrangler.toml `[alias]`), for the libraries that cannot run
 * on workerd: exceljs's browser build (the one Workers resolve) has neither the streaming
 * WorkbookWriter nor the WorkbookReader the Excel export and xlsx reading use, and pdfkit's browser
 * build fails while loading (it resolves a data file against `import.meta.url`). It exports nothing,
 * so each loader finds no usable library and answers the 400 naming the runtime it answered before,
 * without their ~1.5 MB of code (docs/runtimes.md, "Size").
 */
export {}
