/** pdfkit's standard font data modules (exported by the package, untyped by @types/pdfkit). */
declare module 'pdfkit/standard-fonts/*' {
  const font: { name: string }
  export default font
}
