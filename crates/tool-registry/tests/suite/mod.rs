mod bounding;
mod location;
mod permissions;
mod registry;
mod support;
