/** Types of ./chromium.mjs (shared with the plain-Node adoption script). */
export declare const CHROMIUM: string;
export declare function chromiumArgs(options?: { headed?: boolean }): string[];
