mod bounding;
mod location;
mod permissions;
mod registry;
mod scenarios;
mod support;
mod tools;
