/**
 * The values `foreign register --protocol` and `--delivery` take (the registry's), for the command's option parsing
 * without loading the ForeignAgentService client (foreign-api.ts) at start-up.
 */
export { FOREIGN_DELIVERIES, FOREIGN_PROTOCOLS, type ForeignDelivery, type ForeignProtocol } from "../../foreign/registry.js";
