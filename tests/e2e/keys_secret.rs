//! Keys from Secrets Manager: the secret the SAM template generates
//! (`{"master": …}`) is read through the AWS SDK from a local moto, and tokens
//! signed with the derived key verify while the dev key's do not.

use aws_sdk_secretsmanager::config::{Credentials, Region};
use mirobody::identity::{Jwts, Keys};
use mirobody::testing::Moto;

#[tokio::test]
async fn keys_come_from_the_generated_secret() {
    let moto = Moto::start();
    let config = aws_sdk_secretsmanager::Config::builder()
        .http_client(mirobody::aws::http_client())
        .behavior_version(aws_sdk_secretsmanager::config::BehaviorVersion::latest())
        .endpoint_url(&moto.endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .build();
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let master = "m".repeat(40) + "0123456789abcdefghijklmnopqrstuv";
    client
        .create_secret()
        .name("mirobody-keys")
        .secret_string(format!(r#"{{"master":"{master}"}}"#))
        .send()
        .await
        .expect("moto creates the secret");

    let keys = Keys::from_secrets_manager_client(&client, "mirobody-keys")
        .await
        .expect("keys");
    let expected = Keys::from_secret_json(&format!(r#"{{"master":"{master}"}}"#)).unwrap();
    assert_eq!(keys.jwt, expected.jwt);
    assert_ne!(keys.jwt, keys.seal, "signing and sealing keys differ");
    let jwts = Jwts::new(&keys.jwt, "iss", "aud");
    let token = jwts.mint(
        "u1",
        60,
        mirobody::clock::Clock::now(&mirobody::clock::SystemClock),
    );
    assert!(jwts.verify(&token).is_ok());
    assert!(Jwts::new(&[0; 32], "iss", "aud").verify(&token).is_err());

    let missing = Keys::from_secrets_manager_client(&client, "no-such-secret").await;
    assert!(missing.is_err(), "a missing secret stops start-up");
}
