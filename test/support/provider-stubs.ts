/** The provider stubs live beside the demo, which runs them too; tests import them from here. */
export * from "../../src/devtools/demo/provider-stubs.js";
