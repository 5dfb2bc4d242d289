// The app registration Entra ID sign-in (entraAuth) checks tokens against: a delegated scope for people's agents,
// app roles for callers that sign in as themselves (another deployment, the docs pipeline), and the client
// applications that may ask for the scope without a consent prompt. The app validates the tokens itself
// (Forge__Documentation__Auth__*), so this is the whole of what Entra needs: no App Service authentication, no secret.
// Microsoft Graph Bicep extension (alias in infra/bicepconfig.json); its resources live in the tenant, not in the
// resource group this module is deployed to, so `azd down` leaves them (docs/deployment.md).
extension microsoftGraphV1

@description('Alternate key of the registration (Graph `uniqueName`): every deployment updates the same registration. Immutable once created.')
param uniqueName string

@description('The delegated scope a signed-in user\'s token must carry (Forge__Documentation__Auth__Scopes).')
param scopeValue string

@description('The app role accepted from app-only callers that read (Forge__Documentation__Auth__AppRoles).')
param readRoleValue string

@description('The app role accepted from app-only callers of the publish hook (Forge__Documentation__Refresh__AppRoles).')
param refreshRoleValue string

@description('The app role that may read the usage insights report (Forge__Documentation__Insights__AppRoles): assigned to the docs team, people or applications.')
param insightsRoleValue string

@description('Audiences of restricted sites (Forge__Documentation__SiteAudiences): one app role Docs.Audience.<audience> each, assigned to the people and applications that may read those sites.')
param audiences array = []

@description('Client ids pre-authorized for the scope besides VS Code and the Azure CLI (an organisation\'s own agent CLI registration).')
param extraPreAuthorizedClientIds array = []

@description('Object ids of the registration\'s owners: users and service principals (Entra accepts no group as an application\'s owner). Owners may update it; a CI principal with Application.ReadWrite.OwnedBy can maintain only what it owns.')
param ownerIds array = []

// Microsoft's first-party public clients, the same in every tenant. VS Code's Microsoft authentication provider signs
// MCP servers in as this client unless told otherwise (microsoft/vscode, extensions/microsoft-authentication/src/common/
// scopeData.ts, DEFAULT_CLIENT_ID); the Azure CLI's is AZURE_CLI_CLIENT_ID in Azure/azure-cli (azure-cli-core auth).
var vsCodeClientId = 'aebc6443-996d-45c2-90f0-388ff96faa56'
var azureCliClientId = '04b07795-8ddb-461a-bbee-02f9e1bf7b46'
var preAuthorizedClientIds = union([
  vsCodeClientId
  azureCliClientId
], extraPreAuthorizedClientIds)

// Fixed ids: a permission's id must not change once consented to or assigned.
var scopeId = guid(uniqueName, 'scope', scopeValue)
var readRoleId = guid(uniqueName, 'role', readRoleValue)
var refreshRoleId = guid(uniqueName, 'role', refreshRoleValue)
var insightsRoleId = guid(uniqueName, 'role', insightsRoleValue)

// A for-expression may be a variable's whole value only, not a property inside one.
var preAuthorizedApplications = [for clientId in preAuthorizedClientIds: {
  appId: clientId
  delegatedPermissionIds: [
    scopeId
  ]
}]

// One role per audience, assigned to people (a team's group) and applications alike; ids fixed like the others.
var audienceRoles = [for audience in audiences: {
  id: guid(uniqueName, 'role', 'Docs.Audience.${toLower(audience)}')
  value: 'Docs.Audience.${toLower(audience)}'
  displayName: 'Read the ${toLower(audience)} documentation'
  description: 'Lets its holder read the documentation sites restricted to the ${toLower(audience)} audience, beside the sites everyone reads.'
  allowedMemberTypes: [
    'User'
    'Application'
  ]
  isEnabled: true
}]

var displayName = 'Documentation retrieval (${uniqueName})'
var ownRoles = [
  {
    id: readRoleId
    value: readRoleValue
    displayName: 'Read the documentation as an application'
    description: 'Lets an application (such as another deployment\'s managed identity) search and read the documentation as itself.'
    allowedMemberTypes: [
      'Application'
    ]
    isEnabled: true
  }
  {
    id: refreshRoleId
    value: refreshRoleValue
    displayName: 'Refresh the documentation cache'
    description: 'Lets an application (a docs pipeline) call the publish hook, POST /api/admin/refresh. It grants no reading.'
    allowedMemberTypes: [
      'Application'
    ]
    isEnabled: true
  }
  {
    // Assigned to the documentation team (a group, or its tools): the usage report holds scrubbed questions, which
    // readers and the docs pipeline never see.
    id: insightsRoleId
    value: insightsRoleValue
    displayName: 'Read the usage insights report'
    description: 'Lets the documentation team read what agents asked and could not find, GET /api/admin/insights. It grants no reading of pages.'
    allowedMemberTypes: [
      'User'
      'Application'
    ]
    isEnabled: true
  }
]
var appRoles = concat(ownRoles, audienceRoles)
var api = {
  // v2.0 access tokens: issuer {Authority}/{TenantId}/v2.0 and `aud` the client id, as the app checks them.
  requestedAccessTokenVersion: 2
  oauth2PermissionScopes: [
    {
      id: scopeId
      value: scopeValue
      type: 'User'
      adminConsentDisplayName: 'Read the documentation'
      adminConsentDescription: 'Lets the app search and read the documentation this service serves, on behalf of the signed-in user.'
      userConsentDisplayName: 'Read the documentation'
      userConsentDescription: 'Lets the app search and read the documentation this service serves, on your behalf.'
      isEnabled: true
    }
  ]
  preAuthorizedApplications: preAuthorizedApplications
}

// Owners are added, never removed (the extension's default `append` relationship semantics): one added in the portal
// stays, and taking one away is done in Entra.
var owners = {
  relationships: ownerIds
}

resource application 'Microsoft.Graph/applications@v1.0' = {
  uniqueName: uniqueName
  displayName: displayName
  signInAudience: 'AzureADMyOrg'
  appRoles: appRoles
  api: api
  owners: owners
}

// The Application ID URI api://<client id> (the form every tenant's identifier-URI policy allows) names the client id,
// which exists only once the registration does: a second declaration of the same registration adds it, as Microsoft's
// own azd templates do (microsoft/mcp, servers/Azure.Mcp.Server/azd-templates/*/infra/modules/entra-app.bicep).
resource applicationIdUri 'Microsoft.Graph/applications@v1.0' = {
  uniqueName: uniqueName
  displayName: displayName
  signInAudience: 'AzureADMyOrg'
  appRoles: appRoles
  api: api
  owners: owners
  identifierUris: [
    'api://${application.appId}'
  ]
}

// The enterprise application: what app roles are assigned on and what users sign in to in this tenant.
resource servicePrincipal 'Microsoft.Graph/servicePrincipals@v1.0' = {
  appId: application.appId
}

output clientId string = application.appId
output identifierUri string = applicationIdUri.identifierUris[0]
output servicePrincipalId string = servicePrincipal.id
