// The documentation retrieval service on Azure Functions Flex Consumption, keyless: `azd up`, or
// `az deployment sub create --location <region> --template-file infra/main.bicep --parameters environmentName=<name>`.
// Every setting the service reads (shared/settings/) is a parameter below with the service's default and reaches
// the app as one settings object: tools/settings_artifacts.py generates that part from the settings model, and
// tests/infra/test_bicep.py checks it against what the rest deploys.
targetScope = 'subscription'

// ---------------------------------------------------------------------------------------------------------------
// Deployment
// ---------------------------------------------------------------------------------------------------------------

@minLength(1)
@maxLength(64)
@description('Environment name (azd); with the subscription and the region it seeds every resource name.')
param environmentName string

@minLength(1)
@description('Region of every resource; it must offer the Flex Consumption plan.')
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

@description('Resource group to create or update; empty: rg-<environmentName>.')
param resourceGroupName string = ''

@description('Memory of each instance in MB. Semantic matching (the default) needs 2048: measured peaks are 322 MB serving and 380-465 MB while embedding, too close to 512 to rely on; 512 holds lexical search only (about 180 MB), so a deployment asking for 512 with searchSemantic true is refused. See docs/deployment.md.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

// The floor is the lowest maximum Microsoft's Flex Consumption plan page gives ("The lowest maximum scale is currently
// 40", Considerations); its event-driven scaling page has since said 1, and regional previews have accepted less.
// Lower it here only where the region is known to take it.
@minValue(40)
@maxValue(1000)
@description('Most instances the app may scale out to (per function group; always-ready instances do not count). At least 40: docs/deployment.md, "Sizing", says why and where less is accepted.')
param maximumInstanceCount int = 40

@minValue(1)
@maxValue(1000)
@description('Concurrent HTTP requests per instance before another instance is added. 8 is where throughput stopped growing on one core in the load measurement (docs/deployment.md); raise it when the origin is slow.')
param httpPerInstanceConcurrency int = 8

@minValue(0)
@maxValue(20)
@description('Instances kept running for the HTTP functions even when idle (billed while idle); 0: scale to zero, and a cold instance first loads the model and the indexes. The timer and the queue trigger scale apart and get none. With zoneRedundant, 0 or at least 2.')
param alwaysReadyInstanceCount int = 0

@description('Zone redundancy where the region offers it (az functionapp list-flexconsumption-locations --zone-redundant=true): a zone-redundant plan, which keeps at least two always-ready instances per function group, each billed (the HTTP functions, the warm-up timer and, with refreshOnPublish, the queue trigger: four or six instances), zone-redundant storage (Standard_ZRS), and a created network\'s NAT gateway pinned to a zone with a zone-redundant address. Choose it at the first deployment: an existing account\'s replication is not changed by a template from LRS to ZRS.')
param zoneRedundant bool = false

@description('Owner tag (team or person answerable for the deployment) on every resource; empty: none.')
param ownerTag string = ''

@description('Cost-centre tag on every resource; empty: none.')
param costCentreTag string = ''

@description('VNet integration for the app and private endpoints for storage, the Key Vault and the AI Search service; the host storage and the vault then take no public traffic (with refreshOnPublish, the refresh queue\'s own account keeps its public endpoint behind a firewall open to trusted Azure services only, for Event Grid). The subscription needs the Microsoft.App resource provider registered (docs/deployment.md).')
param privateNetworking bool = false

@description('With privateNetworking: the virtual network\'s address space.')
param vnetAddressPrefix string = '10.0.0.0/16'

@description('With privateNetworking: the app\'s integration subnet (delegated to Microsoft.App/environments); a /26 or larger.')
param appSubnetPrefix string = '10.0.1.0/24'

@description('With privateNetworking: the private endpoints\' subnet.')
param privateEndpointSubnetPrefix string = '10.0.2.0/24'

@description('With privateNetworking: an existing route table (resource id) sending the app subnet\'s outbound traffic to the landing zone\'s egress (a hub firewall); empty: a NAT gateway with its own public IP address.')
param egressRouteTableId string = ''

@description('With privateNetworking: resource id of the resource group holding the landing zone\'s private DNS zones (privatelink.blob.<storage suffix>, ...), in which the private endpoints are registered instead of zones created here; the virtual network must then resolve them (vnetDnsServers, peering). Empty: zones are created and linked here.')
param privateDnsZonesResourceGroupId string = ''

@description('With privateNetworking: DNS servers of the virtual network, comma-separated (a hub\'s DNS resolver); empty: Azure-provided DNS.')
param vnetDnsServers string = ''

@description('With privateNetworking: resource id of an existing subnet (a landing zone\'s spoke, in this subscription and region) delegated to Microsoft.App/environments for the app\'s VNet integration, used with existingPrivateEndpointSubnetId instead of a virtual network created here; its NSG, route and DNS are the landing zone\'s. Both or neither. Empty: a network is created.')
param existingIntegrationSubnetId string = ''

@description('With existingIntegrationSubnetId: resource id of the subnet, in the same virtual network, that the private endpoints go into (delegated to nothing).')
param existingPrivateEndpointSubnetId string = ''

@description('Key Vault purge protection: a deleted vault and its secrets cannot be purged for the 7-day retention period, so the vault name (fixed per environment) cannot be reused before then. Off by default so a development environment can be torn down and recreated (azd down --purge); production should turn it on (KEY_VAULT_PURGE_PROTECTION=true). Once on, it cannot be turned off.')
param keyVaultPurgeProtection bool = false

@description('Existing Azure AI Search service the app queries with its identity (Search Index Data Reader); empty: no AI Search provider.')
param aiSearchServiceName string = ''

@description('Resource group of that service; empty: the app\'s resource group.')
param aiSearchResourceGroupName string = ''

@description('DNS suffix of AI Search services in this cloud: the endpoint is https://<aiSearchServiceName>.<suffix> and the private DNS zone privatelink.<suffix>.')
param aiSearchDnsSuffix string = 'search.windows.net'

@description('Fresh on publish for documentation published to Azure Storage: an Event Grid system topic on docsStorageAccountName sends every BlobCreated of a site\'s search index in docsStorageContainer to a queue in a storage account of its own (stev<token>), and the app refreshes that site (Forge__Documentation__Refresh__QueueName). Needs docsStorageAccountName and docsStorageResourceGroupName. See docs/deployment.md.')
param refreshOnPublish bool = false

@description('With refreshOnPublish: the existing storage account the documentation is published to. It must be in this subscription (Event Grid creates a system topic only in its source\'s subscription), in docsStorageResourceGroupName, and have no Event Grid system topic yet (one per source).')
param docsStorageAccountName string = ''

@description('With refreshOnPublish (required then): resource group of docsStorageAccountName, where its system topic and event subscription are created.')
param docsStorageResourceGroupName string = ''

@description('Blob container the documentation is published to in docsStorageAccountName: $web for a static website.')
@minLength(3)
@maxLength(63)
param docsStorageContainer string = '$web'

@description('With refreshOnPublish: the storage queue created in the refresh queue\'s account for the index-written events.')
@minLength(3)
@maxLength(63)
param refreshOnPublishQueue string = 'docs-refresh'

@description('With refreshOnPublish: the blob container in the refresh queue\'s account that events Event Grid could not deliver are dead-lettered to.')
@minLength(3)
@maxLength(63)
param refreshDeadLetterContainer string = 'docs-refresh-dead-letters'

@description('With refreshOnPublish: delivery attempts of one event to the refresh queue before it is dead-lettered (1 to 30).')
@minValue(1)
@maxValue(30)
param refreshDeliveryAttempts int = 30

@description('With refreshOnPublish: minutes an event is retried before it is dead-lettered (1 to 1440).')
@minValue(1)
@maxValue(1440)
param refreshEventTimeToLiveMinutes int = 1440

@description('Entra ID sign-in (docs/deployment.md, "Sign in with Entra ID"): an app registration is created with the Microsoft Graph Bicep extension, or existingEntraAppClientId names one, and the app validates every /api/* request\'s access token itself (Forge__Documentation__Auth__*, Forge__Documentation__Refresh__AppRoles); the HTTP function is then anonymous and Entra is the gate. Creating the registration needs a deploying identity allowed to register applications.')
param entraAuth bool = false

@description('With entraAuth: the client id of an existing app registration to use instead of creating one; it needs the Application ID URI api://<client id>, the delegated scope docs.read and the application roles Docs.Read.All, Docs.Refresh and Docs.Insights.Read. Empty: the deployment creates and maintains the registration.')
param existingEntraAppClientId string = ''

@description('With entraAuth and a created registration: more client ids (comma-separated), such as an organisation\'s own agent CLI registration, pre-authorized for docs.read besides VS Code and the Azure CLI.')
param entraPreAuthorizedClientIds string = ''

@description('With entraAuth and a created registration: its owners besides the deploying principal, comma-separated object ids of users and service principals (a CI principal, a second administrator). Entra accepts no group as an application\'s owner.')
param entraAppOwnerIds string = ''

@description('With entraAuth and a created registration: the principal that deploys becomes an owner too (owners are only ever added).')
param entraAppOwnerIsDeployer bool = true

@description('Object id of the user, group or service principal that operates the service: read access to the index cache and, with refreshOnPublish, the refresh and poison queues and the dead letters (shared keys are off, so nobody else can look). Empty: none.')
param operatorPrincipalId string = ''

@description('What operatorPrincipalId is.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param operatorPrincipalType string = 'Group'

// ---------------------------------------------------------------------------------------------------------------
// Operations: the workspace, alerts and their thresholds (docs/deployment.md, "Operations")
// ---------------------------------------------------------------------------------------------------------------

@description('E-mail address the alerts notify (an action group); empty: the alerts only show in the portal.')
param alertEmail string = ''

@description('Days the Log Analytics workspace keeps logs and telemetry (30 to 730).')
@minValue(30)
@maxValue(730)
param logRetentionDays int = 30

@description('Most GB the Log Analytics workspace ingests a day (telemetry and resource logs); past it ingestion stops until the next day (UTC), and with it the log alerts.')
@minValue(1)
param logDailyCapGb int = 2

@description('Share of /api/* requests answered 5xx, in percent, above which the server-error alert fires.')
@minValue(1)
@maxValue(100)
param alertServerErrorPercent int = 5

@description('p95 duration of /api/* requests (the publish hook apart), in ms, above which the latency alert fires. The load measurement\'s p95 was 0.26 s at 8 concurrent requests and 1.2 s at 50 (docs/deployment.md); a cold instance adds its start.')
@minValue(100)
param alertLatencyP95Ms int = 3000

@description('Fewest /api/* requests in the window for the server-error and latency alerts to judge it.')
@minValue(1)
param alertMinimumRequests int = 20

@description('Minutes the server-error and latency alerts look back over.')
@allowed([
  5
  10
  15
  30
  60
])
param alertWindowMinutes int = 15

@description('Availability test locations, comma-separated Application Insights location ids (West Europe, North Europe, East US by default).')
param availabilityTestLocations string = 'emea-nl-ams-azr,emea-gb-db3-azr,us-va-ash-azr'

@description('Seconds between availability tests from each location.')
@allowed([
  300
  600
  900
])
param availabilityTestFrequencySeconds int = 300

@description('Locations that must fail at once before the health alert fires.')
@minValue(1)
param availabilityFailedLocations int = 2

@description('The health alert (severity 1) is on. Off by default because the availability test runs from the first provision, before a deploy gives /api/health anything to answer: azd\'s postdeploy step turns the alert on after a deploy and sets HEALTH_ALERT_ENABLED true, so later provisions keep it on (infra/hooks/postdeploy.py). With the Azure CLI, pass true once the code is deployed.')
param healthAlertEnabled bool = false

@description('Text a healthy /api/health answer holds: the top-level status ok (the JSON is compact; nested statuses are never followed by "providers").')
param availabilityContentMatch string = '"status":"ok","providers"'

@description('With refreshOnPublish: messages moved to the poison queue within an hour that fire the poison alert.')
@minValue(1)
param alertPoisonMessages int = 1

@description('With refreshOnPublish: failed Event Grid delivery attempts within an hour that fire the delivery alert.')
@minValue(1)
param alertDeliveryFailures int = 5

@description('With refreshOnPublish: events dead-lettered within an hour that fire the dead-letter alert.')
@minValue(1)
param alertDeadLetteredEvents int = 1

@description('A shared workbook on Application Insights charting usage insights for the documentation\'s owners: searches by outcome, unanswered shares per site and version, reads, feedback and dropped events, as counts only, never any text (docs/operations.md, "Usage insights workbook"). Deployed only with insightsEnabled true; false: none.')
param usageWorkbook bool = true

// ---------------------------------------------------------------------------------------------------------------
// The service's settings (Forge__Documentation__*): one parameter each, named after the setting, with its default
// ---------------------------------------------------------------------------------------------------------------

// BEGIN settings generated from shared/settings/ by tools/settings_artifacts.py: change the model, rerun it

@description('Forge__Documentation__Origin: origin hosting every documentation site.')
param origin string = 'https://docs.saif.com'

@description('Forge__Documentation__DefaultSite: site tried first for a location without a site.')
param defaultSite string = 'forge'

@description('Forge__Documentation__Sites: comma-separated sites under the origin.')
param sites string = 'forge,cloud-foundations,iac-azure-modules,iac-okta-modules,iac-aws-modules'

@description('Forge__Documentation__SearchIndexPath: search index path relative to a site.')
param searchIndexPath string = '/search/search_index.json'

@description('Forge__Documentation__CacheFileNameTemplate: per-site cache blob name.')
param cacheFileNameTemplate string = '{site}-docs-search-index.json'

@description('Forge__Documentation__CacheDurationHours: how long a cached index is fresh on first load.')
param cacheDurationHours string = '1'

@description('Forge__Documentation__RawMarkdownUrlPattern: raw Markdown URL pattern; empty converts HTML instead.')
param rawMarkdownUrlPattern string = '{base}/{path}.md'

@description('Forge__Documentation__SearchIndexOverrides: JSON object, site to index path.')
param searchIndexOverrides string = '{}'

@description('Forge__Documentation__VersionDefaults: JSON object: versioned site -> the version (or alias) a search or location without one means, instead of the one the site\'s root redirects to (`docs/how-it-works/versions.md`).')
param versionDefaults string = '{}'

@description('Forge__Documentation__SiteAudiences: JSON object: site -> the audiences that may read it; a site not named is open to every admitted caller. A caller\'s audiences come from its token (Inbound__AudienceTokens__<audience>), its Entra app roles (Docs.Audience.<audience>) or Audiences__Default (docs/audiences.md).')
param siteAudiences string = '{}'

@description('Forge__Documentation__Audiences__Default: Audiences, comma-separated, held by callers no credential of the app\'s names: Functions-key callers (the host checks the key; the app cannot tell keys apart) and, without any gate, everyone. Empty: none, so such callers read only the sites SiteAudiences does not name.')
param audiencesDefault string = ''

@description('Forge__Documentation__WarmVersions: Versions of each versioned site the warm-up keeps warm besides its default: the newest ones listed (hidden ones aside). The others are loaded the first time a request names them.')
param warmVersions string = '2'

@description('Forge__Documentation__MaxIndexEntries: A site\'s search index with more entries than this is refused with the reason (health shows it), counted before it is parsed. Loading 50,000 short entries peaks about 134 MB above the process (tools/index-memory-latest.txt); the sample\'s largest site has 3,730.')
param maxIndexEntries string = '50000'

@description('Forge__Documentation__MaxIndexMegabytes: A site\'s search index larger than this (MB) is refused with the reason, read no further. Loading peaks at about 9 MB per MB of real documentation and up to 28 MB per MB of text made of short distinct words (the worst measured: tools/index-memory-latest.txt), so at 16 MB one site costs at most about 450 MB and cannot take a 2 GB instance down; the sample\'s largest site is 3.3 MB.')
param maxIndexMegabytes string = '16'

@description('Forge__Documentation__Cache__Container: blob container of the shared index cache (created here).')
@minLength(3)
@maxLength(63)
param cacheContainer string = 'docs-index-cache'

@description('Forge__Documentation__Cache__BlobServiceUri: another blob service for the cache; empty: the host storage.')
param cacheBlobServiceUri string = ''

@description('Forge__Documentation__Cache__CheckIntervalSeconds: how often a warm instance looks for a newer index; a refresh written by any instance is served by every instance within it.')
param cacheCheckIntervalSeconds string = '15'

@description('Forge__Documentation__Warmup__Schedule: NCRONTAB schedule of the warm-up timer.')
param warmupSchedule string = '0 */30 * * * *'

@description('Forge__Documentation__Warmup__PageCheckConcurrency: page requests the warm-up keeps in flight while checking which indexed pages the origin no longer serves (1-64).')
param warmupPageCheckConcurrency string = '8'

@description('Forge__Documentation__Warmup__PageCheckSeconds: how long that check may take per site and run.')
param warmupPageCheckSeconds string = '120'

@description('Forge__Documentation__Search__MinScore: relevance floor of the MkDocs provider.')
param searchMinScore string = '0.015'

@description('Forge__Documentation__Search__PathWeights: page-kind rules (JSON list, see docs/configuration.md); [] restores the spec ranking.')
param searchPathWeights string = ''

@description('Forge__Documentation__Search__SiteWaitSeconds: how long a search waits for a site still loading.')
param searchSiteWaitSeconds string = '2'

@description('Forge__Documentation__Search__Semantic: also rank by meaning (needs 2048 MB instances).')
@allowed([
  'true'
  'false'
])
param searchSemantic string = 'true'

@description('Forge__Documentation__SiteRetrySeconds: first retry delay of a site that failed to load.')
param siteRetrySeconds string = '30'

@description('Forge__Documentation__UnpublishedRetrySeconds: retry delay of a site whose index is not published.')
param unpublishedRetrySeconds string = '1800'

@description('Forge__Documentation__RequestTimeoutSeconds: one deadline for all outbound calls of a request.')
param requestTimeoutSeconds string = '30'

@description('Forge__Documentation__Mcp__AllowedHosts: comma-separated extra Host names /api/mcp answers (custom domains).')
param mcpAllowedHosts string = ''

@description('Forge__Documentation__Mcp__AnswerBudgetChars: most characters a get_doc answer takes without maxChars.')
param mcpAnswerBudgetChars string = '24000'

@description('Forge__Documentation__AiSearch__Endpoint: AI Search endpoint; empty: https://<aiSearchServiceName>.<aiSearchDnsSuffix>.')
param aiSearchEndpoint string = ''

@description('Forge__Documentation__AiSearch__IndexName')
param aiSearchIndexName string = 'saif-docs'

@description('Forge__Documentation__AiSearch__SemanticConfigurationName')
param aiSearchSemanticConfigurationName string = 'docs-semantic'

@description('Forge__Documentation__AiSearch__PlatformDocsBaseUrl: base URL blob-storage paths are rewritten to.')
param aiSearchPlatformDocsBaseUrl string = 'https://docs.saif.com'

@description('Forge__Documentation__AiSearch__MkDocsSitePrefix: leading segment stripped from locations; empty: none.')
param aiSearchMkDocsSitePrefix string = 'forge'

@description('Forge__Documentation__AiSearch__SearchFilter: OData filter sent with every search; blank: none. The spec\'s AI Search host ships format eq \'.html\' (the service\'s own default is none): it drops each page\'s Markdown twin before ranking, so the limit counts pages. Blank it for an index whose documents carry no format.')
param aiSearchSearchFilter string = 'format eq \'.html\''

@description('Forge__Documentation__AiSearch__UrlField: index field holding each document\'s blob URL.')
param aiSearchUrlField string = 'metadata_storage_path'

@description('Forge__Documentation__AiSearch__ContentField: index field previews are cut from.')
param aiSearchContentField string = 'content'

@description('Forge__Documentation__AiSearch__TitleField: index field holding the page title.')
param aiSearchTitleField string = 'title'

@description('Forge__Documentation__AiSearch__DescriptionField: index field shown when the content yields no preview.')
param aiSearchDescriptionField string = 'description'

@description('Forge__Documentation__AiSearch__VersionField: The index field holding each document\'s version of a versioned site (mike), when the index carries one: a search naming a version is then filtered on it and its results carry it. Unset: such a search is left to the MkDocs provider, and results carry no version.')
param aiSearchVersionField string = ''

@description('Forge__Documentation__AiSearch__CodeFilter: An OData filter selecting the index\'s code chunks, when it holds code blocks as documents of their own (an indexer skillset that splits pages at their fences, marking each chunk, for example `chunk_kind eq \'code\'`): a `kind=code` search is then answered here, each hit\'s content being the block. Unset: code searches are left to the MkDocs provider.')
param aiSearchCodeFilter string = ''

@description('Forge__Documentation__AiSearch__LanguageField: The filterable index field holding a code chunk\'s language (lower-case names, as the Markdown fence wrote it): a code search\'s `language` is filtered on it and each result\'s `code.language` read from it. Unset: a code search naming a language is left to the MkDocs provider, and a result\'s language is guessed from its text.')
param aiSearchLanguageField string = ''

@description('Forge__Documentation__AiSearch__SiteField: filterable index field holding the site name; empty: searches for one site fall through to MkDocs.')
param aiSearchSiteField string = ''

@description('Forge__Documentation__AiSearch__TimeoutSeconds: upper bound of one search call.')
param aiSearchTimeoutSeconds string = '5'

@description('Forge__Documentation__Remote__Endpoint: another deployment\'s /api/mcp; empty: no remote provider.')
param remoteEndpoint string = ''

@secure()
@description('Forge__Documentation__Remote__Token: bearer token for the remote endpoint, stored in Key Vault.')
param remoteToken string = ''

@description('Forge__Documentation__Remote__Scope: Entra ID scope of the remote deployment; without a token, the app\'s identity gets one for it.')
param remoteScope string = ''

@secure()
@description('Forge__Documentation__Remote__FunctionsKey: the remote deployment\'s Functions key (x-functions-key), stored in Key Vault.')
param remoteFunctionsKey string = ''

@description('Forge__Documentation__Remote__Order: the remote provider\'s place in the chain (AI Search 0, MkDocs 100).')
param remoteOrder string = '50'

@description('Forge__Documentation__Remote__TimeoutSeconds: upper bound of one remote call.')
param remoteTimeoutSeconds string = '10'

@description('Forge__Documentation__Remote__CooldownSeconds: after a failed connection, calls fall through this long.')
param remoteCooldownSeconds string = '300'

@secure()
@description('Forge__Documentation__Inbound__Tokens: bearer tokens this app requires on /api/* (comma-separated), stored in Key Vault; empty: none (the Functions key is the gate).')
param inboundTokens string = ''

@description('Forge__Documentation__Inbound__MaxConcurrentPerClient: requests one client may have in flight per instance.')
param inboundMaxConcurrentPerClient string = '64'

@description('Forge__Documentation__Inbound__ForwardedHops: Under the Functions host, which gives the app no peer address: which X-Forwarded-For entry, counted from the right, is the client (1: the one the platform\'s front end appended, the address that connected to it; 2 with one more proxy of your own in front, such as Front Door). Entries further left are written by the caller and never used.')
param inboundForwardedHops string = '1'

@secure()
@description('Forge__Documentation__Refresh__Tokens: bearer tokens the publish hook (POST /api/admin/refresh) accepts (comma-separated), stored in Key Vault; empty: the hook refuses every caller.')
param refreshTokens string = ''

@description('Forge__Documentation__Refresh__WaitSeconds: how long the publish hook waits for its refresh before answering 202 (at most 220, below the front end\'s 230 s).')
param refreshWaitSeconds string = '100'

@description('Forge__Documentation__Refresh__AppRoles: app roles whose app-only Entra tokens may call the publish hook (comma-separated); entraAuth sets Docs.Refresh.')
param refreshAppRoles string = ''

@description('Forge__Documentation__Insights__Enabled: Keep usage events (scrubbed questions, pages read after a search, agents\' feedback) for the documentation\'s owners, in the index cache\'s storage account, read through GET /api/admin/insights. Off: nothing is kept and submit_feedback answers that feedback is off.')
@allowed([
  'true'
  'false'
])
param insightsEnabled string = 'false'

@description('Forge__Documentation__Insights__MinCallers: A question appears in a report (and in an evaluation set made from it) only when at least this many distinct callers asked it (1 shows every question).')
param insightsMinCallers string = '2'

@description('Forge__Documentation__Insights__RetentionDays: Days usage events are kept: the warm-up deletes older ones. Callers\' pseudonyms change once per this many days, so one caller cannot be followed past it.')
param insightsRetentionDays string = '30'

@secure()
@description('Forge__Documentation__Insights__Tokens: Bearer tokens that may read the insights report (GET /api/admin/insights), comma-separated (a secret: a Key Vault reference in Azure). Apart from Inbound__Tokens and Refresh__Tokens: the docs team holds one, never the docs pipeline. Unset (and no Insights__AppRoles): the report answers 401 to every caller.')
param insightsTokens string = ''

@description('Forge__Documentation__Insights__AppRoles: app roles whose Entra tokens may read the usage insights report (comma-separated); entraAuth sets Docs.Insights.Read, to assign to the documentation team.')
param insightsAppRoles string = ''

@description('Forge__Documentation__Insights__Container: Blob container of the usage events, in the index cache\'s storage account (created if missing); apart from the cache\'s container so its access can be granted apart.')
param insightsContainer string = 'docs-insights'

@description('Forge__Documentation__Auth__TenantId: the tenant whose access tokens are accepted; with authAudience it turns sign-in on. entraAuth sets this deployment\'s tenant.')
param authTenantId string = ''

@description('Forge__Documentation__Auth__Audience: the app registration\'s Application ID URI (api://<client id>) or client id; entraAuth sets the registration\'s.')
param authAudience string = ''

@description('Forge__Documentation__Auth__Scopes: delegated scopes a user\'s token must carry one of (comma-separated); entraAuth sets docs.read.')
param authScopes string = ''

@description('Forge__Documentation__Auth__AppRoles: app roles accepted from app-only callers that read (comma-separated); entraAuth sets Docs.Read.All.')
param authAppRoles string = ''

@description('Forge__Documentation__Auth__Authority: the identity platform\'s host (another for a sovereign cloud).')
param authAuthority string = 'https://login.microsoftonline.com'

@description('Forge__Documentation__Auth__Resource: the MCP endpoint\'s public URL in the protected resource metadata (a custom domain); empty: https://<default host name>/api/mcp.')
param authResource string = ''

// The service's settings, passed to the app as one object. The AiSearch and Remote sections are left out
// entirely unless configured, and a secret only ever appears as a Key Vault reference.
var coreSettings = {
  Forge__Documentation__Origin: origin
  Forge__Documentation__DefaultSite: defaultSite
  Forge__Documentation__Sites: sites
  Forge__Documentation__SearchIndexPath: searchIndexPath
  Forge__Documentation__CacheFileNameTemplate: cacheFileNameTemplate
  Forge__Documentation__CacheDurationHours: cacheDurationHours
  Forge__Documentation__RawMarkdownUrlPattern: rawMarkdownUrlPattern
  Forge__Documentation__SearchIndexOverrides: searchIndexOverrides
  Forge__Documentation__VersionDefaults: versionDefaults
  Forge__Documentation__SiteAudiences: siteAudiences
  Forge__Documentation__Audiences__Default: audiencesDefault
  Forge__Documentation__WarmVersions: warmVersions
  Forge__Documentation__MaxIndexEntries: maxIndexEntries
  Forge__Documentation__MaxIndexMegabytes: maxIndexMegabytes
  Forge__Documentation__Cache__Container: cacheContainer
  Forge__Documentation__Cache__BlobServiceUri: cacheBlobServiceUri
  Forge__Documentation__Cache__CheckIntervalSeconds: cacheCheckIntervalSeconds
  Forge__Documentation__Warmup__Schedule: warmupSchedule
  Forge__Documentation__Warmup__PageCheckConcurrency: warmupPageCheckConcurrency
  Forge__Documentation__Warmup__PageCheckSeconds: warmupPageCheckSeconds
  Forge__Documentation__Search__MinScore: searchMinScore
  Forge__Documentation__Search__PathWeights: searchPathWeights
  Forge__Documentation__Search__SiteWaitSeconds: searchSiteWaitSeconds
  Forge__Documentation__Search__Semantic: searchSemantic
  Forge__Documentation__SiteRetrySeconds: siteRetrySeconds
  Forge__Documentation__UnpublishedRetrySeconds: unpublishedRetrySeconds
  Forge__Documentation__RequestTimeoutSeconds: requestTimeoutSeconds
  Forge__Documentation__Mcp__AllowedHosts: mcpAllowedHosts
  Forge__Documentation__Mcp__AnswerBudgetChars: mcpAnswerBudgetChars
  Forge__Documentation__Identity__ClientId: identity.outputs.clientId
  Forge__Documentation__Inbound__MaxConcurrentPerClient: inboundMaxConcurrentPerClient
  Forge__Documentation__Inbound__ForwardedHops: inboundForwardedHops
  Forge__Documentation__Refresh__WaitSeconds: refreshWaitSeconds
  // Empty (no queue trigger) unless refreshOnPublish creates the queue and the events that fill it.
  Forge__Documentation__Refresh__QueueName: refreshOnPublish ? refreshOnPublishQueue : ''
  Forge__Documentation__Refresh__AppRoles: entraAuth ? docsRefreshRole : refreshAppRoles
  Forge__Documentation__Insights__Enabled: insightsEnabled
  Forge__Documentation__Insights__MinCallers: insightsMinCallers
  Forge__Documentation__Insights__RetentionDays: insightsRetentionDays
  Forge__Documentation__Insights__AppRoles: entraAuth ? docsInsightsRole : insightsAppRoles
  Forge__Documentation__Insights__Container: insightsContainer
  // With entraAuth, sign-in points at the app registration; without it, the parameters pass through (empty: off).
  Forge__Documentation__Auth__TenantId: entraAuth ? tenant().tenantId : authTenantId
  Forge__Documentation__Auth__Audience: entraAuth ? entraAudience : authAudience
  Forge__Documentation__Auth__Scopes: entraAuth ? docsReadScope : authScopes
  Forge__Documentation__Auth__AppRoles: entraAuth ? docsReadRole : authAppRoles
  Forge__Documentation__Auth__Authority: authAuthority
  Forge__Documentation__Auth__Resource: authResource
}
var aiSearchSettings = aiSearchEnabled ? {
  Forge__Documentation__AiSearch__Endpoint: aiSearchEndpointUrl
  Forge__Documentation__AiSearch__IndexName: aiSearchIndexName
  Forge__Documentation__AiSearch__SemanticConfigurationName: aiSearchSemanticConfigurationName
  Forge__Documentation__AiSearch__PlatformDocsBaseUrl: aiSearchPlatformDocsBaseUrl
  Forge__Documentation__AiSearch__MkDocsSitePrefix: aiSearchMkDocsSitePrefix
  Forge__Documentation__AiSearch__SearchFilter: aiSearchSearchFilter
  Forge__Documentation__AiSearch__UrlField: aiSearchUrlField
  Forge__Documentation__AiSearch__ContentField: aiSearchContentField
  Forge__Documentation__AiSearch__TitleField: aiSearchTitleField
  Forge__Documentation__AiSearch__DescriptionField: aiSearchDescriptionField
  Forge__Documentation__AiSearch__VersionField: aiSearchVersionField
  Forge__Documentation__AiSearch__CodeFilter: aiSearchCodeFilter
  Forge__Documentation__AiSearch__LanguageField: aiSearchLanguageField
  Forge__Documentation__AiSearch__SiteField: aiSearchSiteField
  Forge__Documentation__AiSearch__TimeoutSeconds: aiSearchTimeoutSeconds
} : {}
var remoteSettings = remoteEnabled ? {
  Forge__Documentation__Remote__Endpoint: remoteEndpoint
  Forge__Documentation__Remote__Scope: remoteScope
  Forge__Documentation__Remote__Order: remoteOrder
  Forge__Documentation__Remote__TimeoutSeconds: remoteTimeoutSeconds
  Forge__Documentation__Remote__CooldownSeconds: remoteCooldownSeconds
} : {}
// Each secret given is stored in the Key Vault, and its setting is a reference to it.
var remoteTokenSecretName = 'remote-token'
var remoteTokenGiven = remoteEnabled && !empty(remoteToken)
var remoteTokenSettings = remoteTokenGiven ? {
  Forge__Documentation__Remote__Token: '@Microsoft.KeyVault(SecretUri=https://${keyVaultName}${environment().suffixes.keyvaultDns}/secrets/${remoteTokenSecretName})'
} : {}
var remoteFunctionsKeySecretName = 'remote-functions-key'
var remoteFunctionsKeyGiven = remoteEnabled && !empty(remoteFunctionsKey)
var remoteFunctionsKeySettings = remoteFunctionsKeyGiven ? {
  Forge__Documentation__Remote__FunctionsKey: '@Microsoft.KeyVault(SecretUri=https://${keyVaultName}${environment().suffixes.keyvaultDns}/secrets/${remoteFunctionsKeySecretName})'
} : {}
var inboundTokensSecretName = 'inbound-tokens'
var inboundTokensGiven = !empty(inboundTokens)
var inboundTokensSettings = inboundTokensGiven ? {
  Forge__Documentation__Inbound__Tokens: '@Microsoft.KeyVault(SecretUri=https://${keyVaultName}${environment().suffixes.keyvaultDns}/secrets/${inboundTokensSecretName})'
} : {}
var refreshTokensSecretName = 'refresh-tokens'
var refreshTokensGiven = !empty(refreshTokens)
var refreshTokensSettings = refreshTokensGiven ? {
  Forge__Documentation__Refresh__Tokens: '@Microsoft.KeyVault(SecretUri=https://${keyVaultName}${environment().suffixes.keyvaultDns}/secrets/${refreshTokensSecretName})'
} : {}
var insightsTokensSecretName = 'insights-tokens'
var insightsTokensGiven = !empty(insightsTokens)
var insightsTokensSettings = insightsTokensGiven ? {
  Forge__Documentation__Insights__Tokens: '@Microsoft.KeyVault(SecretUri=https://${keyVaultName}${environment().suffixes.keyvaultDns}/secrets/${insightsTokensSecretName})'
} : {}
var anySecretGiven = remoteTokenGiven || remoteFunctionsKeyGiven || inboundTokensGiven || refreshTokensGiven || insightsTokensGiven
var keyVaultSecrets = {
  '${remoteTokenSecretName}': remoteToken
  '${remoteFunctionsKeySecretName}': remoteFunctionsKey
  '${inboundTokensSecretName}': inboundTokens
  '${refreshTokensSecretName}': refreshTokens
  '${insightsTokensSecretName}': insightsTokens
}
var documentationSettings = union(coreSettings, aiSearchSettings, remoteSettings, remoteTokenSettings, remoteFunctionsKeySettings, inboundTokensSettings, refreshTokensSettings, insightsTokensSettings)
// END generated settings

// ---------------------------------------------------------------------------------------------------------------

var abbrs = loadJsonContent('abbreviations.json')
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = union({
  'azd-env-name': environmentName
}, empty(ownerTag) ? {} : {
  owner: ownerTag
}, empty(costCentreTag) ? {} : {
  'cost-center': costCentreTag
})
// The project's Python (pyproject.toml requires-python).
var pythonVersion = '3.11'
var deploymentContainerName = 'app-package-${resourceToken}'
var keyVaultName = '${abbrs.keyVaultVaults}${resourceToken}'
var apiName = '${abbrs.webSitesFunctions}api-${resourceToken}'
var aiSearchEnabled = !empty(aiSearchServiceName) || !empty(aiSearchEndpoint)
var aiSearchEndpointUrl = empty(aiSearchEndpoint) ? 'https://${aiSearchServiceName}.${aiSearchDnsSuffix}' : aiSearchEndpoint
var remoteEnabled = !empty(remoteEndpoint)
// Entra ID sign-in: what the registration exposes and what the app then requires are the same names.
var docsReadScope = 'docs.read'
var docsReadRole = 'Docs.Read.All'
var docsRefreshRole = 'Docs.Refresh'
var docsInsightsRole = 'Docs.Insights.Read'
// The audiences SiteAudiences names: each becomes an app role of the registration, Docs.Audience.<audience>, the
// role the app reads from a token to open those sites (docs/audiences.md). union(x, []) drops the duplicates.
var siteAudienceNames = union(flatten(map(items(json(empty(siteAudiences) ? '{}' : siteAudiences)), entry => entry.value)), [])
var entraAppCreated = entraAuth && empty(existingEntraAppClientId)
var entraAudience = entraAppCreated ? entraApp.outputs.identifierUri : 'api://${existingEntraAppClientId}'
// Comma-separated lists, blanks and empty entries dropped: a trailing comma would otherwise be an id Graph refuses.
var entraPreAuthorizedClientIdList = filter(map(split(entraPreAuthorizedClientIds, ','), id => trim(id)), id => !empty(id))
var entraAppOwnerIdList = filter(map(split(entraAppOwnerIds, ','), id => trim(id)), id => !empty(id))
var entraAppOwners = union(entraAppOwnerIsDeployer ? [
  deployer().objectId
] : [], entraAppOwnerIdList)
var vnetDnsServerList = filter(map(split(vnetDnsServers, ','), server => trim(server)), server => !empty(server))
// A landing zone's existing spoke instead of a network created here: the subnets' virtual network is the part of
// each id up to .../virtualNetworks/<name> (split and taken, so that an empty id is no error).
var existingSubnets = !(empty(existingIntegrationSubnetId) && empty(existingPrivateEndpointSubnetId))
var existingSubnetsVnetId = toLower(join(take(split(existingIntegrationSubnetId, '/'), 9), '/'))
var existingSubnetsOneVnet = existingSubnetsVnetId == toLower(join(take(split(existingPrivateEndpointSubnetId, '/'), 9), '/'))
var existingSubnetsHere = startsWith(existingSubnetsVnetId, toLower('${subscription().id}/resourceGroups/'))
var networkCreated = privateNetworking && !existingSubnets
// Where the app integrates and the private endpoints go: the spoke's subnets, or the network created here.
var appSubnetId = existingSubnets ? spokeSubnets.outputs.integrationSubnetId : network.outputs.appSubnetId
var privateEndpointSubnetId = existingSubnets ? spokeSubnets.outputs.privateEndpointSubnetId : network.outputs.privateEndpointSubnetId
var privateNetworkId = existingSubnets ? spokeSubnets.outputs.vnetId : network.outputs.id
var availabilityTestLocationList = filter(map(split(availabilityTestLocations, ','), id => trim(id)), id => !empty(id))
// The secrets given, by name (a name is no secret): Key Vault refuses an empty value.
var givenSecretNames = map(filter(items(keyVaultSecrets), item => !empty(item.value)), item => item.key)
// Key Vault's private DNS zone is privatelink.vaultcore.<cloud>, not privatelink plus the vault suffix (.vault.<cloud>).
var keyVaultDnsZoneName = 'privatelink${replace(environment().suffixes.keyvaultDns, '.vault.', '.vaultcore.')}'
// An instance below 2048 MB cannot hold semantic matching (instanceMemoryMB): such a deployment is refused.
var semanticFitsInstance = !((instanceMemoryMB < 2048) && (searchSemantic == 'true'))
// The host storage serves blob only (HTTP and timer triggers, the cache); add 'table' here with its role if that
// changes. refreshOnPublish's queue is in an account of its own, with endpoints of its own (refreshQueueServices).
var storageServices = [
  'blob'
]
// The refresh queue's account: named here, whether or not it is deployed, so the modules that grant roles on it can
// name it without reading the outputs of a module that may not exist. Queue for the app's trigger, blob for the
// operator reading the dead letters.
var refreshQueueAccountName = '${abbrs.storageStorageAccounts}ev${resourceToken}'
var refreshQueueServices = [
  'queue'
  'blob'
]

// Combinations that cannot work, refused before anything is deployed: the message names what to change.
var refusals = [
  semanticFitsInstance ? '' : 'instanceMemoryMB ${instanceMemoryMB} cannot hold semantic matching: use 2048 or 4096, or set searchSemantic false (azd: DOCS_FORGE_DOCUMENTATION_SEARCH_SEMANTIC=false).'
  // Left empty, the docs account would be looked for in the resource group this deployment is creating.
  (refreshOnPublish && empty(docsStorageResourceGroupName)) ? 'refreshOnPublish needs docsStorageResourceGroupName (azd: DOCS_STORAGE_RESOURCE_GROUP): the resource group of the existing storage account the documentation is published to.' : ''
  (zoneRedundant && alwaysReadyInstanceCount == 1) ? 'zoneRedundant needs alwaysReadyInstanceCount 0 or at least 2 (azd: FLEX_ALWAYS_READY_INSTANCE_COUNT): a zone-redundant plan keeps two always-ready instances per function group, one in each of two zones.' : ''
  // An existing spoke: both subnets, with privateNetworking, in one virtual network of this subscription (a private
  // endpoint must be in its virtual network's subscription), and none of the settings of a network created here.
  (existingSubnets && !privateNetworking) ? 'existingIntegrationSubnetId and existingPrivateEndpointSubnetId apply with privateNetworking (azd: PRIVATE_NETWORKING=true).' : ''
  (existingSubnets && (empty(existingIntegrationSubnetId) || empty(existingPrivateEndpointSubnetId))) ? 'An existing spoke needs both existingIntegrationSubnetId and existingPrivateEndpointSubnetId (azd: EXISTING_INTEGRATION_SUBNET_ID, EXISTING_PRIVATE_ENDPOINT_SUBNET_ID).' : ''
  (existingSubnets && !existingSubnetsOneVnet) ? 'existingIntegrationSubnetId and existingPrivateEndpointSubnetId must be subnets of one virtual network.' : ''
  (existingSubnets && toLower(existingIntegrationSubnetId) == toLower(existingPrivateEndpointSubnetId)) ? 'existingIntegrationSubnetId and existingPrivateEndpointSubnetId must be two subnets: Flex Consumption\'s integration subnet can hold nothing else.' : ''
  (existingSubnets && !existingSubnetsHere) ? 'The existing subnets must be in this deployment\'s subscription: a private endpoint is created in its virtual network\'s subscription.' : ''
  (existingSubnets && !(empty(egressRouteTableId) && empty(vnetDnsServers))) ? 'egressRouteTableId and vnetDnsServers apply to a network created here; an existing spoke keeps the landing zone\'s route table and DNS servers.' : ''
]
var refusal = join(filter(refusals, message => !empty(message)), ' ')

// The refusals sit on the resource group: every module is deployed into it (or names it), so ARM stops there and
// creates nothing else. fail() needs a Bicep CLI released in 2025 or later.
resource rg 'Microsoft.Resources/resourceGroups@2022-09-01' = {
  name: empty(resourceGroupName) ? '${abbrs.resourcesResourceGroups}${environmentName}' : resourceGroupName
  location: location
  tags: empty(refusal) ? tags : fail(refusal)
}

// Every module's deployment name carries the token: deployments are named per resource group, and the docs account's,
// the AI Search service's and a shared resource group (resourceGroupName) can hold several environments' at once.
module identity 'app/identity.bicep' = {
  name: 'identity-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.managedIdentityUserAssignedIdentities}api-${resourceToken}'
    location: location
    tags: tags
  }
}

module monitoring 'app/monitoring.bicep' = {
  name: 'monitoring-${resourceToken}'
  scope: rg
  params: {
    logAnalyticsName: '${abbrs.operationalInsightsWorkspaces}${resourceToken}'
    applicationInsightsName: '${abbrs.insightsComponents}${resourceToken}'
    location: location
    tags: tags
    retentionInDays: logRetentionDays
    dailyCapGb: logDailyCapGb
  }
}

// The documentation owners' view of usage insights, on the component the app's counters go to: only while the app
// counts usage (insightsEnabled), since otherwise it has nothing to show.
module insightsWorkbook 'app/insights-workbook.bicep' = if (usageWorkbook && insightsEnabled == 'true') {
  name: 'insights-workbook-${resourceToken}'
  scope: rg
  params: {
    location: location
    tags: tags
    applicationInsightsName: monitoring.outputs.applicationInsightsName
  }
}

module storage 'app/storage.bicep' = {
  name: 'storage-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.storageStorageAccounts}${resourceToken}'
    location: location
    tags: tags
    deploymentContainerName: deploymentContainerName
    cacheContainerName: cacheContainer
    privateNetworking: privateNetworking
    zoneRedundant: zoneRedundant
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

// Fresh on publish (refreshOnPublish): the queue Event Grid delivers to, in an account of its own, so that only this
// account (events, nothing else) opens a public endpoint to trusted services and the host storage never does.
module refreshQueue 'app/refresh-queue.bicep' = if (refreshOnPublish) {
  name: 'refresh-queue-${resourceToken}'
  scope: rg
  params: {
    name: refreshQueueAccountName
    location: location
    tags: tags
    queueName: refreshOnPublishQueue
    deadLetterContainerName: refreshDeadLetterContainer
    privateNetworking: privateNetworking
    zoneRedundant: zoneRedundant
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

module rbac 'app/rbac.bicep' = {
  name: 'rbac-${resourceToken}'
  scope: rg
  params: {
    principalId: identity.outputs.principalId
    storageAccountName: storage.outputs.name
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    refreshQueue: refreshOnPublish
    refreshQueueAccountName: refreshQueueAccountName
  }
  dependsOn: [
    refreshQueue
  ]
}

module operatorAccess 'app/operator-access.bicep' = if (!empty(operatorPrincipalId)) {
  name: 'operator-access-${resourceToken}'
  scope: rg
  params: {
    principalId: operatorPrincipalId
    principalType: operatorPrincipalType
    storageAccountName: storage.outputs.name
    cacheContainerName: cacheContainer
    queues: refreshOnPublish
    refreshQueueAccountName: refreshQueueAccountName
    queueName: refreshOnPublishQueue
    deadLetterContainerName: refreshDeadLetterContainer
  }
  dependsOn: [
    refreshQueue
  ]
}

module searchAccess 'app/search-access.bicep' = if (!empty(aiSearchServiceName)) {
  name: 'search-access-${resourceToken}'
  scope: resourceGroup(empty(aiSearchResourceGroupName) ? rg.name : aiSearchResourceGroupName)
  params: {
    searchServiceName: aiSearchServiceName
    principalId: identity.outputs.principalId
  }
}

module keyVault 'app/keyvault.bicep' = if (anySecretGiven) {
  name: 'keyvault-${resourceToken}'
  scope: rg
  params: {
    name: keyVaultName
    location: location
    tags: tags
    principalId: identity.outputs.principalId
    purgeProtection: keyVaultPurgeProtection
    privateNetworking: privateNetworking
    secrets: keyVaultSecrets
    secretNames: givenSecretNames
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

// Or, with existingIntegrationSubnetId and existingPrivateEndpointSubnetId, the landing zone's spoke, checked in its
// own resource group; the app and the private endpoints then use its subnets and no network is created.
module spokeSubnets 'app/spoke-subnets.bicep' = if (privateNetworking && existingSubnets) {
  name: 'spoke-subnets-${resourceToken}'
  scope: resourceGroup(existingSubnets ? split(existingIntegrationSubnetId, '/')[4] : rg.name)
  params: {
    integrationSubnetId: existingIntegrationSubnetId
    privateEndpointSubnetId: existingPrivateEndpointSubnetId
    location: location
  }
}

module network 'app/network.bicep' = if (networkCreated) {
  name: 'network-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.networkVirtualNetworks}${resourceToken}'
    location: location
    tags: tags
    addressPrefix: vnetAddressPrefix
    appSubnetPrefix: appSubnetPrefix
    privateEndpointSubnetPrefix: privateEndpointSubnetPrefix
    appNsgName: '${abbrs.networkNetworkSecurityGroups}app-${resourceToken}'
    privateEndpointNsgName: '${abbrs.networkNetworkSecurityGroups}pep-${resourceToken}'
    natGatewayName: '${abbrs.networkNatGateways}${resourceToken}'
    natPublicIpName: '${abbrs.networkPublicIPAddresses}ng-${resourceToken}'
    egressRouteTableId: egressRouteTableId
    dnsServers: vnetDnsServerList
    zoneRedundant: zoneRedundant
  }
}

module storageEndpoints 'app/private-endpoint.bicep' = [for service in (privateNetworking ? storageServices : []): {
  name: 'private-endpoint-${service}-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.networkPrivateEndpoints}${service}-${resourceToken}'
    location: location
    tags: tags
    subnetId: privateEndpointSubnetId
    vnetId: privateNetworkId
    targetId: storage.outputs.id
    groupId: service
    dnsZoneName: 'privatelink.${service}.${environment().suffixes.storage}'
    existingDnsZonesResourceGroupId: privateDnsZonesResourceGroupId
  }
}]

// The refresh queue's account through the virtual network: the app's queue trigger, the operator's dead letters. After
// the host storage's endpoints: with zones created here, both register in privatelink.blob, which one writes at a time.
module refreshQueueEndpoints 'app/private-endpoint.bicep' = [for service in ((privateNetworking && refreshOnPublish) ? refreshQueueServices : []): {
  name: 'private-endpoint-refresh-${service}-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.networkPrivateEndpoints}ev-${service}-${resourceToken}'
    location: location
    tags: tags
    subnetId: privateEndpointSubnetId
    vnetId: privateNetworkId
    targetId: refreshQueue.outputs.id
    groupId: service
    dnsZoneName: 'privatelink.${service}.${environment().suffixes.storage}'
    existingDnsZonesResourceGroupId: privateDnsZonesResourceGroupId
  }
  dependsOn: [
    storageEndpoints
  ]
}]

module searchEndpoint 'app/private-endpoint.bicep' = if (privateNetworking && !empty(aiSearchServiceName)) {
  name: 'private-endpoint-search-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.networkPrivateEndpoints}search-${resourceToken}'
    location: location
    tags: tags
    subnetId: privateEndpointSubnetId
    vnetId: privateNetworkId
    targetId: searchAccess.outputs.id
    groupId: 'searchService'
    dnsZoneName: 'privatelink.${aiSearchDnsSuffix}'
    existingDnsZonesResourceGroupId: privateDnsZonesResourceGroupId
  }
}

module vaultEndpoint 'app/private-endpoint.bicep' = if (privateNetworking && anySecretGiven) {
  name: 'private-endpoint-vault-${resourceToken}'
  scope: rg
  params: {
    name: '${abbrs.networkPrivateEndpoints}vault-${resourceToken}'
    location: location
    tags: tags
    subnetId: privateEndpointSubnetId
    vnetId: privateNetworkId
    targetId: keyVault.outputs.id
    groupId: 'vault'
    dnsZoneName: keyVaultDnsZoneName
    existingDnsZonesResourceGroupId: privateDnsZonesResourceGroupId
  }
}

// Entra ID sign-in (entraAuth): the app registration and its enterprise application, in the tenant. The module sits in
// the resource group like every other, but what it creates does not (the Graph extension's resources are tenant-wide).
module entraApp 'app/entra-app.bicep' = if (entraAppCreated) {
  name: 'entra-app-${resourceToken}'
  scope: rg
  params: {
    uniqueName: apiName
    scopeValue: docsReadScope
    readRoleValue: docsReadRole
    refreshRoleValue: docsRefreshRole
    insightsRoleValue: docsInsightsRole
    audiences: siteAudienceNames
    extraPreAuthorizedClientIds: entraPreAuthorizedClientIdList
    ownerIds: entraAppOwners
  }
}

module api 'app/function.bicep' = {
  name: 'api-${resourceToken}'
  scope: rg
  params: {
    planName: '${abbrs.webServerFarms}${resourceToken}'
    name: apiName
    location: location
    tags: tags
    serviceName: 'api'
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentContainerName: deploymentContainerName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    pythonVersion: pythonVersion
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    httpPerInstanceConcurrency: httpPerInstanceConcurrency
    alwaysReadyInstanceCount: alwaysReadyInstanceCount
    zoneRedundant: zoneRedundant
    subnetId: privateNetworking ? appSubnetId : ''
    queueServiceUri: refreshOnPublish ? refreshQueue.outputs.queueEndpoint : ''
    appSettings: documentationSettings
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
  dependsOn: [
    keyVault
    storageEndpoints
    refreshQueueEndpoints
    searchEndpoint
    vaultEndpoint
  ]
}

// Fresh on publish (refreshOnPublish): the docs account's system topic, in that account's resource group and region;
// its identity may put messages on the refresh queue and write dead letters in the refresh queue's account, and only
// then is the subscription that delivers there created.
module docsEvents 'app/docs-events.bicep' = if (refreshOnPublish) {
  name: 'docs-events-${resourceToken}'
  scope: resourceGroup(empty(docsStorageResourceGroupName) ? rg.name : docsStorageResourceGroupName)
  params: {
    name: '${abbrs.eventGridSystemTopics}docs-${resourceToken}'
    tags: tags
    storageAccountName: empty(docsStorageAccountName) ? fail('refreshOnPublish needs docsStorageAccountName (DOCS_STORAGE_ACCOUNT): the existing storage account the documentation is published to.') : docsStorageAccountName
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

module docsEventsAccess 'app/docs-events-access.bicep' = if (refreshOnPublish) {
  name: 'docs-events-access-${resourceToken}'
  scope: rg
  params: {
    principalId: docsEvents.outputs.principalId
    storageAccountName: refreshQueue.outputs.name
    queueName: refreshOnPublishQueue
    deadLetterContainerName: refreshDeadLetterContainer
  }
}

module docsEventsSubscription 'app/docs-events-subscription.bicep' = if (refreshOnPublish) {
  name: 'docs-events-subscription-${resourceToken}'
  scope: resourceGroup(empty(docsStorageResourceGroupName) ? rg.name : docsStorageResourceGroupName)
  params: {
    systemTopicName: docsEvents.outputs.name
    name: '${abbrs.eventGridEventSubscriptions}docs-refresh-${resourceToken}'
    containerName: docsStorageContainer
    indexPath: searchIndexPath
    queueStorageAccountId: refreshQueue.outputs.id
    queueName: refreshOnPublishQueue
    deadLetterContainerName: refreshDeadLetterContainer
    maxDeliveryAttempts: refreshDeliveryAttempts
    eventTimeToLiveInMinutes: refreshEventTimeToLiveMinutes
  }
  dependsOn: [
    docsEventsAccess
  ]
}

module alerts 'app/alerts.bicep' = {
  name: 'alerts-${resourceToken}'
  scope: rg
  params: {
    location: location
    tags: tags
    actionGroupName: '${abbrs.insightsActionGroups}${resourceToken}'
    webTestName: '${abbrs.insightsWebTests}health-${resourceToken}'
    alertNamePrefix: '${abbrs.insightsAlertRules}${resourceToken}'
    alertEmail: alertEmail
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
    healthUrl: 'https://${api.outputs.defaultHostName}/api/health'
    availabilityLocations: availabilityTestLocationList
    availabilityFrequencySeconds: availabilityTestFrequencySeconds
    availabilityFailedLocations: availabilityFailedLocations
    availabilityContentMatch: availabilityContentMatch
    healthAlertEnabled: healthAlertEnabled
    serverErrorPercent: alertServerErrorPercent
    latencyP95Ms: alertLatencyP95Ms
    minimumRequests: alertMinimumRequests
    windowMinutes: alertWindowMinutes
    refreshOnPublish: refreshOnPublish
    refreshQueueAccountName: refreshQueueAccountName
    poisonQueueName: '${refreshOnPublishQueue}-poison'
    poisonMessages: alertPoisonMessages
    docsEventsTopicId: refreshOnPublish ? docsEvents.outputs.id : ''
    deliveryFailures: alertDeliveryFailures
    deadLetteredEvents: alertDeadLetteredEvents
  }
}

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_NAME string = api.outputs.name
output SERVICE_API_NAME string = api.outputs.name
output SERVICE_API_URI string = 'https://${api.outputs.defaultHostName}'
output MCP_ENDPOINT string = 'https://${api.outputs.defaultHostName}/api/mcp'
output REFRESH_ENDPOINT string = 'https://${api.outputs.defaultHostName}/api/admin/refresh'
output AZURE_MANAGED_IDENTITY_CLIENT_ID string = identity.outputs.clientId
output AZURE_STORAGE_ACCOUNT_NAME string = storage.outputs.name
output AZURE_REFRESH_QUEUE_ACCOUNT_NAME string = refreshOnPublish ? refreshQueueAccountName : ''
output AZURE_KEY_VAULT_NAME string = anySecretGiven ? keyVaultName : ''
output AZURE_LOG_ANALYTICS_WORKSPACE_NAME string = monitoring.outputs.logAnalyticsName
// What azd's postdeploy step needs to turn the health alert on (infra/hooks/postdeploy.py): the alert, and this cloud's
// Azure Resource Manager endpoint.
output HEALTH_ALERT_ID string = alerts.outputs.healthAlertId
output AZURE_RESOURCE_MANAGER_ENDPOINT string = environment().resourceManager
// Entra ID sign-in: what a caller's Remote__Scope and an app role assignment need. Named apart from the
// existingEntraAppClientId variable (ENTRA_EXISTING_APP_CLIENT_ID): azd feeds outputs back as variables.
output ENTRA_APP_CLIENT_ID string = entraAuth ? (entraAppCreated ? entraApp.outputs.clientId : existingEntraAppClientId) : ''
output ENTRA_APP_ID_URI string = entraAuth ? entraAudience : ''
output ENTRA_APP_SERVICE_PRINCIPAL_ID string = entraAppCreated ? entraApp.outputs.servicePrincipalId : ''
