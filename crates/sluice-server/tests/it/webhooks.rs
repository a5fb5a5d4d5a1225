//! webhooks e2e: TODO
