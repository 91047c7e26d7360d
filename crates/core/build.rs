// The migrations are embedded at compile time (db/migrations.rs): a new file in migrations/
// must rebuild this crate, which Cargo would not notice on its own.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
