//! Roles on the dashboard: every page and form asks for the role its
//! route needs, as the admin API does.
