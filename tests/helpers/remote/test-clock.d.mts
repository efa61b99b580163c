export declare const TEST_CLOCK_HEADER: string
export declare function installTestClock(): (request: Request) => Request
