"""Provider credentials as data: one documented token shape per line, rules built from them.

Two kinds of entry:

* :class:`Token` — a self-identifying token (a fixed prefix, a checksum-like suffix):
  found anywhere, in any syntax, with no name around it;
* :class:`Named` — a value whose shape alone is too plain (40 hex characters, a UUID) but
  which is a credential when it sits under the provider's name (``DATADOG_…=``, ``heroku: …``).

A shape is written in a small notation: literal text, and ``{cN}`` / ``{cN-M}`` for N (to M)
characters of class ``c`` (see :data:`CLASSES`). From the shape come the rule's regex, its
keywords (the literal prefix), true-positive samples (random bodies) and false-positive
samples (a body one character short, a masked body ``xxxx…``, the prefix in prose), so
every rule is tested against its own documented shape (``samples``).

Shapes follow the providers' own documentation and the public detectors that describe
them (gitleaks ``config/gitleaks.toml`` and ``cmd/generate/config/rules/*.go``, trufflehog
``pkg/detectors``, detect-secrets ``plugins``); no rule text is copied from them.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property

CLASSES: dict[str, str] = {
    "a": string.ascii_letters + string.digits,  # alphanumeric
    "u": string.ascii_uppercase + string.digits,  # upper-case alphanumeric
    "l": string.ascii_lowercase + string.digits,  # lower-case alphanumeric
    "h": "0123456789abcdef",  # lower-case hex
    "H": "0123456789ABCDEF",  # upper-case hex
    "x": "0123456789abcdefABCDEF",  # hex, either case
    "d": string.digits,
    "w": string.ascii_letters + string.digits + "_",
    "k": string.ascii_letters + string.digits + "_-",  # base64url
    "b": string.ascii_letters + string.digits + "+/",  # base64
    "L": string.ascii_letters,
    "z": string.ascii_lowercase,
    "Z": string.ascii_uppercase,
    "c": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",  # bech32 (lower)
    "C": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",  # bech32 (upper)
}
UUID = "{h8}-{h4}-{h4}-{h4}-{h12}"
_PART = re.compile(r"\{([A-Za-z])(\d+)(?:-(\d+))?\}")
_WORD = string.ascii_letters + string.digits + "_"


@dataclass(frozen=True)
class Part:
    literal: str = ""
    cls: str = ""
    low: int = 0
    high: int = 0


def parse(shape: str) -> tuple[Part, ...]:
    parts: list[Part] = []
    pos = 0
    for m in _PART.finditer(shape):
        if m.start() > pos:
            parts.append(Part(literal=shape[pos : m.start()]))
        low = int(m.group(2))
        high = int(m.group(3)) if m.group(3) else low
        parts.append(Part(cls=m.group(1), low=low, high=high))
        pos = m.end()
    if pos < len(shape):
        parts.append(Part(literal=shape[pos:]))
    return tuple(parts)


def _char_class(chars: str) -> str:
    return "[" + "".join("\\" + c if c in "\\]^-[" else c for c in chars) + "]"


def _class_regex(cls: str) -> str:
    return _char_class(CLASSES[cls])


def shape_regex(shape: str) -> str:
    out = []
    for part in parse(shape):
        if part.literal:
            out.append(re.escape(part.literal))
        else:
            count = f"{{{part.low}}}" if part.low == part.high else f"{{{part.low},{part.high}}}+"
            out.append(_class_regex(part.cls) + count)
    return "".join(out)


def _tail(shape: str) -> str:
    last = parse(shape)[-1]
    chars = set(_WORD) | (set(CLASSES[last.cls]) if last.cls else set())
    return "(?!" + _char_class("".join(sorted(chars))) + ")"


def _random_part(part: Part, rng: random.Random, n: int) -> str:
    alphabet = CLASSES[part.cls]
    chars = [rng.choice(alphabet) for _ in range(n)]
    pools = (string.digits, string.ascii_uppercase, string.ascii_lowercase)
    for pool in pools:  # mixed classes where the class allows (never a degenerate body)
        present = [c for c in alphabet if c in pool]
        if present and n >= 6 and not any(c in pool for c in chars):
            chars[rng.randrange(n)] = rng.choice(present)
    return "".join(chars)


def generate(shape: str, rng: random.Random) -> str:
    """A fresh value of ``shape`` (random bodies; each variable part at a random length)."""
    return "".join(p.literal or _random_part(p, rng, rng.randint(p.low, p.high)) for p in parse(shape))


def masked(shape: str) -> str:
    """The shape with every body filled by its placeholder character (`ghp_xxxx…`, `0000…`)."""
    out = []
    for p in parse(shape):
        if p.literal:
            out.append(p.literal)
            continue
        alphabet = CLASSES[p.cls]
        fillchar = "x" if "x" in alphabet else "X" if "X" in alphabet else "0"
        out.append(fillchar * p.high)
    return "".join(out)


def truncated(shape: str, rng: random.Random) -> str | None:
    """A value one character short in the longest part (no rule may take it), or None."""
    parts = parse(shape)
    variable = [i for i, p in enumerate(parts) if p.cls and p.low >= 2]
    if not variable:
        return None
    short = max(variable, key=lambda i: parts[i].low)
    return "".join(p.literal or _random_part(p, rng, p.low - 1 if i == short else p.low) for i, p in enumerate(parts))


@cache
def prefix(shape: str) -> str:
    first = parse(shape)[0]
    return first.literal


@dataclass(frozen=True)
class Token:
    id: str
    shape: str
    description: str
    placeholder: str = "<REDACTED_TOKEN>"
    keywords: tuple[str, ...] = ()  # default: the literal prefix, lower-cased
    leading: bool = False  # the shape starts with a class: back up over word characters to its start

    @cached_property
    def pattern(self) -> str:
        """The shape, not inside a longer word (or right after a JSON `\\n`). With a literal prefix
        the boundary is checked after it, so the regex starts with a literal the engine finds fast."""
        head = prefix(self.shape)
        if head and not self.leading:
            lit = re.escape(head)
            start = rf"{lit}(?:(?<![A-Za-z0-9_\\]{lit})|(?<=\\[nrt]{lit}))"
            return start + shape_regex(self.shape[len(head) :]) + _tail(self.shape)
        start = r"(?:(?<![A-Za-z0-9_\\])|(?<=\\[nrt]))"
        return start + shape_regex(self.shape) + _tail(self.shape)

    @property
    def rule_keywords(self) -> tuple[str, ...]:
        if self.keywords:
            return self.keywords
        head = prefix(self.shape)
        assert head, f"{self.id}: a shape without a literal prefix needs keywords"
        return (head.lower(),)


@dataclass(frozen=True)
class Named:
    id: str
    vendor: str  # a regex for the provider's word inside the key (case-insensitive)
    keywords: tuple[str, ...]
    shape: str
    description: str
    placeholder: str = "<REDACTED_API_KEY>"

    @cached_property
    def value_regex(self) -> re.Pattern[str]:
        return re.compile(shape_regex(self.shape))


Matcher = Callable[[str], bool]

# --- tokens that identify themselves ------------------------------------------------------------

API = "<REDACTED_API_KEY>"
PW = "<REDACTED_PASSWORD>"

TOKENS: tuple[Token, ...] = (
    # AI and ML
    Token("anthropic-admin-key", "sk-ant-admin01-{k93}AA", "Anthropic admin API key", API),
    Token("openai-legacy-key", "sk-{a20}T3BlbkFJ{a20}", "OpenAI user key (the base64 of 'OpenAI' inside)", API),
    Token("groq-api-key", "gsk_{a52}", "Groq API key", API),
    Token("xai-api-key", "xai-{a80}", "xAI API key", API),
    Token("perplexity-api-key", "pplx-{a48}", "Perplexity API key", API),
    Token("replicate-api-token", "r8_{a37}", "Replicate API token"),
    Token("tavily-api-key", "tvly-{a32}", "Tavily API key", API),
    Token("langsmith-api-key", "lsv2_{z2}_{h32}_{h10}", "LangSmith personal or service key", API),
    Token("pinecone-api-key", "pcsk_{a5-6}_{a60-70}", "Pinecone API key", API),
    Token("huggingface-org-token", "api_org_{L34}", "Hugging Face organisation token"),
    Token("fireworks-api-key", "fw_{a24}", "Fireworks AI API key", API),
    Token("firecrawl-api-key", "fc-{h32}", "Firecrawl API key", API),
    Token("elevenlabs-api-key", "sk_{h48}", "ElevenLabs API key", API),
    # source hosting, CI, registries
    Token("gitlab-feature-flag-token", "glffct-{k20}", "GitLab feature flag client token"),
    Token("gitlab-feed-token", "glft-{k20}", "GitLab feed token"),
    Token("gitlab-incoming-mail-token", "glimt-{k25}", "GitLab incoming mail token"),
    Token("gitlab-agent-token", "glagent-{k50}", "GitLab Kubernetes agent token"),
    Token("gitlab-oauth-secret", "gloas-{k64}", "GitLab OAuth application secret"),
    Token("gitlab-scim-token", "glsoat-{k20}", "GitLab SCIM token"),
    Token("gitlab-runner-registration", "GR1348941{k20}", "GitLab runner registration token"),
    Token("gitlab-session-cookie", "_gitlab_session={l32}", "GitLab session cookie"),
    Token("bitbucket-app-password", "ATBB{a32}", "Bitbucket app password"),
    Token("atlassian-api-token", "ATATT3{k186}", "Atlassian API token"),
    Token("buildkite-agent-token", "bkua_{h40}", "Buildkite user access token"),
    Token("circleci-personal-token", "CCIPAT_{a22}_{h40}", "CircleCI personal API token"),
    Token("docker-hub-pat", "dckr_pat_{k27}", "Docker Hub personal access token"),
    Token("docker-hub-oat", "dckr_oat_{k32}", "Docker Hub organisation access token"),
    Token("pypi-test-token", "pypi-AgENdGVzdC5weXBpLm9yZw{k50-300}", "TestPyPI upload token"),
    Token("rubygems-api-key", "rubygems_{h48}", "RubyGems API key", API),
    Token("nuget-api-key", "oy2{l43}", "NuGet API key", API),
    Token("crates-io-token", "cio{a32}", "crates.io API token"),
    Token("clojars-token", "CLOJARS_{l60}", "Clojars deploy token"),
    Token("artifactory-api-key", "AKCp{a69}", "JFrog Artifactory API key", API),
    Token("artifactory-reference-token", "cmVmd{a59}", "JFrog Artifactory reference token"),
    Token("sourcegraph-token", "sgp_{h16}_{h40}", "Sourcegraph access token"),
    Token("sourcegraph-legacy-token", "sgp_{h40}", "Sourcegraph access token (legacy)"),
    Token("postman-api-key", "PMAK-{h24}-{h34}", "Postman API key", API),
    Token("readme-api-key", "rdme_{l70}", "ReadMe API key", API),
    Token("prefect-api-key", "pnu_{a36}", "Prefect API key", API),
    Token("pulumi-access-token", "pul-{h40}", "Pulumi access token"),
    Token(
        "terraform-cloud-token",
        "{a14}.atlasv1.{k60-70}",
        "Terraform Cloud / Enterprise API token",
        keywords=(".atlasv1.",),
        leading=True,
    ),
    Token("harness-pat", "pat.{k22}.{a24}.{a20}", "Harness personal access token"),
    Token("harness-sat", "sat.{k22}.{a24}.{a20}", "Harness service account token"),
    Token("infracost-api-key", "ico-{a32}", "Infracost API key", API),
    Token("codacy-project-token", "codacy_{h32}", "Codacy project token"),
    # cloud and infrastructure
    Token("aws-bedrock-key", "ABSK{b100-200}", "Amazon Bedrock API key", API),
    Token("aws-temporary-key-id", "A3T{u17}", "AWS access key id (A3T… form)", API),
    Token(
        "azure-ad-client-secret", "{w3}{d1}Q~{k31-34}", "Azure AD (Entra) client secret", keywords=("q~",), leading=True
    ),
    Token("alibaba-access-key-id", "LTAI{a20}", "Alibaba Cloud AccessKey id", API),
    Token("tencent-secret-id", "AKID{a32}", "Tencent Cloud SecretId", API),
    Token("scaleway-access-key", "SCW{u17}", "Scaleway access key", API),
    Token("cloudflare-origin-ca-key", "v1.0-{h24}-{h146}", "Cloudflare Origin CA key", API),
    Token("digitalocean-pat", "dop_v1_{h64}", "DigitalOcean personal access token"),
    Token("digitalocean-oauth-token", "doo_v1_{h64}", "DigitalOcean OAuth token"),
    Token("digitalocean-refresh-token", "dor_v1_{h64}", "DigitalOcean OAuth refresh token"),
    Token("flyio-token-v2", "fm2_{b100-2000}", "Fly.io macaroon token (`FlyV1 fm2_…`, comma-joined)"),
    Token("flyio-token-v1", "fm1r_{b100-2000}", "Fly.io macaroon token (v1)"),
    Token("flyio-org-token", "fo1_{k43}", "Fly.io organisation token"),
    Token("heroku-api-key-v2", "HRKU-AA{k58}", "Heroku API key (HRKU-AA format)", API),
    Token("render-api-key", "rnd_{a32}", "Render API key", API),
    Token("databricks-token", "dapi{h32}", "Databricks personal access token"),
    Token("planetscale-token", "pscale_tkn_{k32-64}", "PlanetScale service token"),
    Token("planetscale-oauth", "pscale_oauth_{k32-64}", "PlanetScale OAuth token"),
    Token("planetscale-password", "pscale_pw_{k32-64}", "PlanetScale database password", PW),
    Token("supabase-access-token", "sbp_{h40}", "Supabase personal access token"),
    Token("supabase-secret-key", "sb_secret_{k31}", "Supabase secret API key", API),
    Token("clickhouse-cloud-key", "4b1d{a38}", "ClickHouse Cloud API secret key", API),
    Token("doppler-personal-token", "dp.pt.{a43}", "Doppler personal token"),
    Token("doppler-service-token", "dp.st.{w2-35}.{a43}", "Doppler service token"),
    Token("doppler-cli-token", "dp.ct.{a43}", "Doppler CLI token"),
    Token("doppler-service-account", "dp.sa.{a43}", "Doppler service account token"),
    Token("doppler-scim-token", "dp.scim.{a43}", "Doppler SCIM token"),
    Token("doppler-audit-token", "dp.audit.{a43}", "Doppler audit token"),
    Token("vault-service-token", "hvs.{k90-120}", "HashiCorp Vault service token"),
    Token("vault-batch-token", "hvb.{k138-300}", "HashiCorp Vault batch token"),
    Token("vault-recovery-token", "hvr.{k90-120}", "HashiCorp Vault recovery token"),
    Token("onepassword-secret-key", "A3-{u6}-{u11}-{u5}-{u5}-{u5}", "1Password account secret key"),
    Token("onepassword-service-token", "ops_eyJ{b250-1000}", "1Password service account token"),
    Token("age-secret-key", "AGE-SECRET-KEY-1{C58}", "age encryption secret key"),
    Token("openshift-user-token", "sha256~{k43}", "OpenShift user token"),
    Token("scalingo-token", "tk-us-{k48}", "Scalingo API token"),
    Token("yandex-iam-token", "t1.{k8-64}.{k86}", "Yandex Cloud IAM token"),
    Token("yandex-api-key", "AQVN{k35-38}", "Yandex Cloud API key", API),
    Token("akamai-client-token", "akab-{l16}-{l16}", "Akamai EdgeGrid client token"),
    # observability
    Token("sentry-user-token", "sntryu_{h64}", "Sentry user auth token"),
    Token("sentry-org-token", "sntrys_eyJpYXQiO{b50-300}_{b43}", "Sentry organisation auth token"),
    Token("grafana-cloud-token", "glc_{b32-400}", "Grafana Cloud access policy token"),
    Token("grafana-service-account", "glsa_{a32}_{h8}", "Grafana service account token"),
    Token("grafana-api-key", "eyJrIjoi{a70-400}", "Grafana API key (legacy)", API),
    Token("new-relic-user-key", "NRAK-{u27}", "New Relic user API key", API),
    Token("new-relic-insert-key", "NRII-{k32}", "New Relic insights insert key", API),
    Token("new-relic-browser-key", "NRJS-{h19}", "New Relic browser API key", API),
    Token("new-relic-license-key", "{h36}NRAL", "New Relic ingest licence key", API, keywords=("nral",), leading=True),
    Token("dynatrace-token", "dt0c01.{u24}.{a64}", "Dynatrace API token"),
    Token("honeycomb-ingest-key", "hcaik_01{l58}", "Honeycomb ingest key", API),
    Token("honeycomb-config-key", "hcxik_01{l58}", "Honeycomb configuration key", API),
    Token("maxmind-license-key", "{a6}_{a29}_mmk", "MaxMind licence key", API, keywords=("_mmk",), leading=True),
    # chat, e-mail, messaging
    Token("slack-user-token", "xoxp-{d10-13}-{d10-13}-{d10-13}-{h32}", "Slack user token"),
    Token("slack-config-token", "xoxe.xoxp-1-{u163-166}", "Slack configuration access token"),
    Token("slack-refresh-token", "xoxe-1-{u146}", "Slack configuration refresh token"),
    Token("slack-legacy-token", "xoxs-{d10}-{d10}-{d10}-{h64}", "Slack legacy workspace token"),
    Token("telegram-bot-token", "{d8-10}:AA{k33}", "Telegram bot API token", keywords=(":aa",), leading=True),
    Token("sendinblue-api-key", "xkeysib-{h64}-{a16}", "Brevo (Sendinblue) API key", API),
    Token("brevo-smtp-key", "xsmtpsib-{h64}-{a16}", "Brevo SMTP key", PW),
    Token("mailgun-private-key", "key-{h32}", "Mailgun private API key", API),
    Token(
        "mailchimp-api-key",
        "{h32}-us{d1-2}",
        "Mailchimp API key",
        API,
        keywords=tuple(f"-us{n}" for n in range(10)),
        leading=True,
    ),
    Token(
        "microsoft-teams-webhook",
        "{l3-32}.webhook.office.com/webhookb2/" + UUID + "@" + UUID + "/IncomingWebhook/{h32}/" + UUID,
        "Microsoft Teams incoming webhook URL",
        keywords=(".webhook.office.com/",),
        leading=True,
    ),
    Token("zapier-webhook", "https://hooks.zapier.com/hooks/catch/{d5-9}/{l6-8}/", "Zapier catch hook URL"),
    Token("notion-integration-token", "ntn_{d11}{a35}", "Notion integration token"),
    Token("notion-legacy-secret", "secret_{a43}", "Notion internal integration secret (legacy)"),
    Token("linear-api-key", "lin_api_{a40}", "Linear API key", API),
    Token("asana-pat", "2/1{d15}/1{d15}:{h32}", "Asana personal access token"),
    Token("clickup-token", "pk_{d6-10}_{u32}", "ClickUp personal token"),
    Token("figma-pat", "figd_{k40}", "Figma personal access token"),
    Token("frameio-token", "fio-u-{k64}", "Frame.io developer token"),
    Token("typeform-token", "tfp_{k59}", "Typeform personal token"),
    Token("contentful-pat", "CFPAT-{k43}", "Contentful personal access token"),
    # payments and commerce
    Token("stripe-prod-key", "sk_prod_{a24-99}", "Stripe secret key (prod)", API),
    Token("stripe-webhook-secret", "whsec_{a32}", "Stripe webhook signing secret"),
    Token("razorpay-key", "rzp_live_{a14}", "Razorpay live key id", API),
    Token("square-access-token", "EAAA{k60}", "Square access token"),
    Token("square-legacy-token", "sq0atp-{k22}", "Square legacy access token"),
    Token("square-oauth-secret", "sq0csp-{k43}", "Square OAuth secret"),
    Token("shopify-access-token", "shpat_{x32}", "Shopify admin API access token"),
    Token("shopify-custom-token", "shpca_{x32}", "Shopify custom app access token"),
    Token("shopify-private-token", "shppa_{x32}", "Shopify private app access token"),
    Token("shopify-shared-secret", "shpss_{x32}", "Shopify shared secret"),
    Token("braintree-access-token", "access_token$production${l16}${h32}", "Braintree / PayPal access token"),
    Token("flutterwave-secret-key", "FLWSECK_TEST-{h32}-X", "Flutterwave secret key", API),
    Token("flutterwave-encryption-key", "FLWSECK_TEST{h12}", "Flutterwave encryption key", API),
    Token("duffel-token", "duffel_live_{k43}", "Duffel live API token"),
    Token("duffel-test-token", "duffel_test_{k43}", "Duffel test API token"),
    Token("easypost-api-key", "EZAK{a54}", "EasyPost production API key", API),
    Token("easypost-test-key", "EZTK{a54}", "EasyPost test API key", API),
    Token("shippo-live-token", "shippo_live_{h40}", "Shippo live API token"),
    Token("shippo-test-token", "shippo_test_{h40}", "Shippo test API token"),
    Token("adobe-client-secret", "p8e-{a32}", "Adobe OAuth client secret"),
    Token("facebook-page-token", "EAAC{a100-300}", "Facebook / Meta access token"),
    Token("facebook-app-token", "EAAM{a100-300}", "Facebook / Meta app access token"),
    Token("google-oauth-secret", "GOCSPX-{k28}", "Google OAuth client secret"),
    Token("google-oauth-refresh", "1//0{k60-200}", "Google OAuth refresh token", keywords=("1//0",)),
    Token("google-oauth-access", "ya29.{k100-400}", "Google OAuth access token"),
    Token("firebase-fcm-server-key", "AAAA{k7}:APA91b{k134}", "Firebase Cloud Messaging server key", API),
    Token("intra42-client-secret", "s-s4t2ud-{h64}", "42 intra client secret"),
    Token("settlemint-pat", "sm_pat_{a16}", "SettleMint personal access token"),
    Token("settlemint-aat", "sm_aat_{a16}", "SettleMint application access token"),
    Token("settlemint-sat", "sm_sat_{a16}", "SettleMint service access token"),
    Token("authress-access-key", "sc_{l5-30}.{l4-6}.acc_{l10-32}.{k30-120}", "Authress service client access key"),
    Token("jwt-base64", "ZXlKaGJHY2lPaU{b40-4000}", "a JSON Web Token, itself base64-encoded"),
)

# --- values that are credentials under their provider's name -----------------------------------

NAMED: tuple[Named, ...] = (
    Named(
        "datadog-api-key",
        r"datadog|dd(?=[_-](?:api|app))",
        ("datadog", "dd_api", "dd_app", "dd-api"),
        "{h32}",
        "Datadog API key",
    ),
    Named(
        "datadog-app-key", r"datadog|dd(?=[_-]app)", ("datadog", "dd_app", "dd-app"), "{h40}", "Datadog application key"
    ),
    Named("postmark-token", r"postmark", ("postmark",), UUID, "Postmark server or account token", "<REDACTED_TOKEN>"),
    Named("mailgun-signing-key", r"mailgun", ("mailgun",), "{h32}-{h8}-{h8}", "Mailgun webhook signing key"),
    Named("twilio-auth-token", r"twilio", ("twilio",), "{h32}", "Twilio auth token", "<REDACTED_TOKEN>"),
    Named("twilio-api-key", r"twilio", ("twilio",), "SK{x32}", "Twilio API key sid"),
    Named(
        "airtable-pat",
        r"airtable",
        ("airtable",),
        "pat{a14}.{h64}",
        "Airtable personal access token",
        "<REDACTED_TOKEN>",
    ),
    Named("octopus-deploy-key", r"octopus", ("octopus",), "API-{u26}", "Octopus Deploy API key"),
    Named("heroku-api-key", r"heroku", ("heroku",), UUID, "Heroku API key (a UUID)"),
    Named("hubspot-api-key", r"hubspot", ("hubspot",), "{H8}-{H4}-{H4}-{H4}-{H12}", "HubSpot API key"),
    Named("snyk-token", r"snyk", ("snyk",), UUID, "Snyk API token", "<REDACTED_TOKEN>"),
    Named("squarespace-key", r"squarespace", ("squarespace",), UUID, "Squarespace API key"),
    Named("sendbird-token", r"sendbird", ("sendbird",), "{h40}", "Sendbird API token", "<REDACTED_TOKEN>"),
    Named("kucoin-key", r"kucoin", ("kucoin",), "{h24}", "KuCoin API key"),
    Named("kucoin-secret", r"kucoin", ("kucoin",), UUID, "KuCoin API secret"),
    Named(
        "messagebird-key",
        r"message[_-]?bird",
        ("messagebird", "message_bird", "message-bird"),
        "{a25}",
        "MessageBird API key",
    ),
    Named("mattermost-token", r"mattermost", ("mattermost",), "{l26}", "Mattermost access token", "<REDACTED_TOKEN>"),
    Named("netlify-token", r"netlify", ("netlify",), "{k40-46}", "Netlify access token", "<REDACTED_TOKEN>"),
    Named("nytimes-key", r"nytimes|newyorktimes", ("nytimes", "newyorktimes"), "{k32}", "New York Times API key"),
    Named("okta-token", r"okta", ("okta",), "00{k40}", "Okta API token", "<REDACTED_TOKEN>"),
    Named("plaid-secret", r"plaid", ("plaid",), "{l30}", "Plaid secret"),
    Named(
        "plaid-access-token", r"plaid", ("plaid",), "access-{z7-11}-" + UUID, "Plaid access token", "<REDACTED_TOKEN>"
    ),
    Named("rapidapi-key", r"rapid[_-]?api", ("rapidapi", "rapid_api"), "{k50}", "RapidAPI key"),
    Named("sumologic-key", r"sumo", ("sumo",), "{a64}", "Sumo Logic access key"),
    Named("travisci-token", r"travis", ("travis",), "{a22}", "Travis CI token", "<REDACTED_TOKEN>"),
    Named("twitch-token", r"twitch", ("twitch",), "{l30}", "Twitch API token", "<REDACTED_TOKEN>"),
    Named("twitter-api-secret", r"twitter|(?<![a-z])x[_-]?api", ("twitter", "x_api"), "{a50}", "Twitter/X API secret"),
    Named("twitter-access-secret", r"twitter", ("twitter",), "{a45}", "Twitter/X access token secret"),
    Named(
        "twitter-bearer-token",
        r"twitter",
        ("twitter",),
        "AAAAAAAAAAAAAAAAAAAAA{a80-100}",
        "Twitter/X bearer token",
        "<REDACTED_TOKEN>",
    ),
    Named(
        "twitter-access-token",
        r"twitter",
        ("twitter",),
        "{d15-25}-{a20-40}",
        "Twitter/X access token",
        "<REDACTED_TOKEN>",
    ),
    Named("yandex-aws-key", r"yandex", ("yandex",), "YC{k38}", "Yandex Cloud static access key"),
    Named("zendesk-secret", r"zendesk", ("zendesk",), "{a40}", "Zendesk API token", "<REDACTED_TOKEN>"),
    Named("algolia-key", r"algolia", ("algolia",), "{h32}", "Algolia admin API key"),
    Named("airtable-key", r"airtable", ("airtable",), "key{a14}", "Airtable API key (legacy)"),
    Named("asana-secret", r"asana", ("asana",), "{l32}", "Asana client secret"),
    Named("beamer-token", r"beamer", ("beamer",), "b_{k44}", "Beamer API token", "<REDACTED_TOKEN>"),
    Named("bitbucket-secret", r"bitbucket", ("bitbucket",), "{k64}", "Bitbucket client secret"),
    Named("bittrex-key", r"bittrex", ("bittrex",), "{l32}", "Bittrex API key"),
    Named(
        "cloudflare-api-token",
        r"cloudflare|cf(?=[_-]api)",
        ("cloudflare", "cf_api"),
        "{k40}",
        "Cloudflare API token",
        "<REDACTED_TOKEN>",
    ),
    Named(
        "cloudflare-global-key",
        r"cloudflare|cf(?=[_-]api)",
        ("cloudflare", "cf_api"),
        "{h37}",
        "Cloudflare global API key",
    ),
    Named("codecov-token", r"codecov", ("codecov",), UUID, "Codecov upload token", "<REDACTED_TOKEN>"),
    Named("cohere-key", r"cohere|co_api", ("cohere", "co_api"), "{a40}", "Cohere API key"),
    Named("coinbase-token", r"coinbase", ("coinbase",), "{k64}", "Coinbase access token", "<REDACTED_TOKEN>"),
    Named("confluent-secret", r"confluent", ("confluent",), "{a64}", "Confluent API secret"),
    Named("contentful-token", r"contentful", ("contentful",), "{k43}", "Contentful delivery token", "<REDACTED_TOKEN>"),
    Named("discord-client-secret", r"discord", ("discord",), "{k32}", "Discord client secret"),
    Named("droneci-token", r"drone", ("drone",), "{a32}", "Drone CI token", "<REDACTED_TOKEN>"),
    Named("dropbox-token", r"dropbox", ("dropbox",), "sl.{k135-1400}", "Dropbox short-lived token", "<REDACTED_TOKEN>"),
    Named("etsy-key", r"etsy", ("etsy",), "{l24}", "Etsy API key"),
    Named("facebook-secret", r"facebook|fb(?=[_-]app)", ("facebook", "fb_app"), "{h32}", "Facebook app secret"),
    Named("fastly-token", r"fastly", ("fastly",), "{k32}", "Fastly API token", "<REDACTED_TOKEN>"),
    Named("finnhub-token", r"finnhub", ("finnhub",), "{l20}", "Finnhub API token", "<REDACTED_TOKEN>"),
    Named("flickr-key", r"flickr", ("flickr",), "{l32}", "Flickr API key"),
    Named("freshbooks-token", r"freshbooks", ("freshbooks",), "{l64}", "FreshBooks access token", "<REDACTED_TOKEN>"),
    Named("gitter-token", r"gitter", ("gitter",), "{k40}", "Gitter access token", "<REDACTED_TOKEN>"),
    Named(
        "gocardless-token", r"gocardless", ("gocardless",), "live_{k40}", "GoCardless live token", "<REDACTED_TOKEN>"
    ),
    Named("intercom-token", r"intercom", ("intercom",), "{k60}", "Intercom access token", "<REDACTED_TOKEN>"),
    Named(
        "jfrog-identity-token",
        r"jfrog|artifactory",
        ("jfrog", "artifactory"),
        "{l64}",
        "JFrog identity token",
        "<REDACTED_TOKEN>",
    ),
    Named("kraken-key", r"kraken", ("kraken",), "{b80-90}", "Kraken API key"),
    Named(
        "launchdarkly-key",
        r"launchdarkly|ld(?=[_-]sdk)",
        ("launchdarkly", "ld_sdk"),
        "{k40}",
        "LaunchDarkly access key",
    ),
    Named("linkedin-secret", r"linked[_-]?in", ("linkedin", "linked_in"), "{a16}", "LinkedIn client secret"),
    Named(
        "mapbox-secret-token",
        r"mapbox",
        ("mapbox",),
        "sk.eyJ{k60-120}.{k22}",
        "Mapbox secret token",
        "<REDACTED_TOKEN>",
    ),
    Named(
        "mapbox-public-token",
        r"mapbox",
        ("mapbox",),
        "pk.eyJ{k60-120}.{k22}",
        "Mapbox access token",
        "<REDACTED_TOKEN>",
    ),
    Named("mandrill-key", r"mandrill", ("mandrill",), "{k22}", "Mandrill API key"),
    Named("sparkpost-key", r"sparkpost", ("sparkpost",), "{h40}", "SparkPost API key"),
    Named("vonage-secret", r"vonage|nexmo", ("vonage", "nexmo"), "{a16}", "Vonage (Nexmo) API secret"),
    Named(
        "pagerduty-key",
        r"pagerduty|pd(?=[_-](?:api|token))",
        ("pagerduty", "pd_api", "pd_token"),
        "{k20}",
        "PagerDuty API key",
    ),
    Named("opsgenie-key", r"opsgenie", ("opsgenie",), UUID, "Opsgenie API key"),
    Named(
        "splunk-hec-token",
        r"splunk|hec",
        ("splunk", "hec_"),
        UUID,
        "Splunk HTTP event collector token",
        "<REDACTED_TOKEN>",
    ),
    Named("wandb-key", r"wandb", ("wandb",), "{h40}", "Weights & Biases API key"),
    Named(
        "azure-storage-key",
        r"account[_-]?key|storage[_-]?key|azure",
        ("accountkey", "account_key", "storage_key", "storagekey", "azure"),
        "{b86}==",
        "Azure storage account key",
    ),
    Named(
        "azure-devops-pat",
        r"azure[_-]?devops|ado(?=[_-](?:pat|token))|vsts",
        ("azure_devops", "azuredevops", "ado_pat", "ado_token", "vsts"),
        "{l52}",
        "Azure DevOps personal access token",
        "<REDACTED_TOKEN>",
    ),
    Named("vultr-key", r"vultr", ("vultr",), "{u36}", "Vultr API key"),
    Named(
        "hetzner-token",
        r"hetzner|hcloud",
        ("hetzner", "hcloud"),
        "{a64}",
        "Hetzner Cloud API token",
        "<REDACTED_TOKEN>",
    ),
    Named("linode-token", r"linode", ("linode",), "{h64}", "Linode personal access token", "<REDACTED_TOKEN>"),
    Named("mongodb-atlas-key", r"atlas", ("atlas",), UUID, "MongoDB Atlas private API key"),
    Named("upstash-token", r"upstash", ("upstash",), "{k40-100}", "Upstash REST token", "<REDACTED_TOKEN>"),
    Named("mistral-key", r"mistral", ("mistral",), "{a32}", "Mistral AI API key"),
    Named("deepgram-key", r"deepgram", ("deepgram",), "{h40}", "Deepgram API key"),
    Named("assemblyai-key", r"assembly[_-]?ai", ("assemblyai", "assembly_ai"), "{h32}", "AssemblyAI API key"),
    Named("together-key", r"together", ("together",), "{h64}", "Together AI API key"),
    Named("segment-write-key", r"segment", ("segment",), "{a32}", "Segment write key"),
    Named("mixpanel-secret", r"mixpanel", ("mixpanel",), "{h32}", "Mixpanel API secret"),
    Named("amplitude-key", r"amplitude", ("amplitude",), "{h32}", "Amplitude API key"),
    Named("trello-token", r"trello", ("trello",), "{h64}", "Trello token", "<REDACTED_TOKEN>"),
    Named("zoom-secret", r"zoom", ("zoom",), "{a32}", "Zoom client secret"),
    Named("auth0-secret", r"auth0", ("auth0",), "{k64}", "Auth0 client secret"),
    Named("pushover-token", r"pushover", ("pushover",), "{l30}", "Pushover application token", "<REDACTED_TOKEN>"),
    Named(
        "circleci-token", r"circle[_-]?ci", ("circleci", "circle_ci"), "{h40}", "CircleCI API token", "<REDACTED_TOKEN>"
    ),
    Named("snowflake-password", r"snowflake", ("snowflake",), "{a16-64}", "Snowflake password", PW),
    Named("privateai-key", r"private[_-]?ai", ("privateai", "private_ai"), "{l32}", "Private AI API key"),
    Named("meraki-key", r"meraki", ("meraki",), "{h40}", "Cisco Meraki API key"),
    Named("lob-key", r"lob(?=[_-])", ("lob_", "lob-"), "live_{h35}", "Lob live API key"),
    Named("finicity-secret", r"finicity", ("finicity",), "{l20}", "Finicity client secret"),
    Named("adafruit-key", r"adafruit|aio(?=[_-]key)", ("adafruit", "aio_key"), "{k32}", "Adafruit IO key"),
)


# --- Discord bot tokens: no prefix, so a finder ----------------------------------------------------
# `<base64 of the bot's numeric id>.<6 characters: timestamp>.<27-38 characters: HMAC>`
# (discord.com/developers/docs/reference#authentication). Found from the middle part, a literal
# `.` the regex engine looks for fast, then checked back and forth.

_DISCORD_MIDDLE = re.compile(r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])")
_DISCORD_ID = re.compile(r"[MNO][A-Za-z0-9_-]{23,25}")
_B64URL = frozenset(string.ascii_letters + string.digits + "_-")


def find_discord_bot_tokens(text: str, config: object) -> list[tuple[int, int]]:
    """A list, not a generator: the rule runs on every text, and almost none has a middle part."""
    if _DISCORD_MIDDLE.search(text) is None:
        return []
    import base64

    found: list[tuple[int, int]] = []
    for m in _DISCORD_MIDDLE.finditer(text):
        start = m.start()
        while start > 0 and text[start - 1] in _B64URL and m.start() - start < 26:
            if start > 1 and text[start - 2] == "\\" and text[start - 1] in "nrt":
                break  # a JSON `\n` before the token
            start -= 1
        if start > 0 and text[start - 1] in _B64URL and not (start > 1 and text[start - 2] == "\\"):
            continue
        head = text[start : m.start()]
        if not _DISCORD_ID.fullmatch(head):
            continue
        try:
            decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
        except ValueError:
            continue
        if decoded.isdigit() and 16 <= len(decoded) <= 20:  # a Discord snowflake id
            found.append((start, m.end()))
    return found


def discord_bot_token(rng: random.Random) -> str:
    import base64

    snowflake = str(rng.randrange(10**17, 2 * 10**18)).encode()
    head = base64.urlsafe_b64encode(snowflake).rstrip(b"=").decode()
    return head + "." + generate("{k6}.{k27-38}", rng)
