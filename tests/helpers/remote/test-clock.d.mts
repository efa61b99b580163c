export declare const TEST_CLOCK_HEADER: string
/** What turns a request into the one to serve; `at(ms)` fixes the instant for work no request carries. */
export declare function installTestClock(): ((request: Request) => Request) & { at(ms: number): void }
