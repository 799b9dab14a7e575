mod api;
mod events;
