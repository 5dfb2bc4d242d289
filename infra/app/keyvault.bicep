// A Key Vault for the service's secrets, read by the app through Key Vault references as its own identity.
param name string
param location string
param tags object = {}
@description('Principal (object) id of the app\'s user-assigned identity.')
param principalId string
@secure()
@description('Secret name to value.')
param secrets object
@description('The names in secrets whose value is given: each becomes one secret (Key Vault refuses an empty value).')
param secretNames array
@description('Purge protection: a deleted vault and its secrets cannot be purged before the retention period ends. Irreversible once on (the property accepts no false), so off is sent as no value at all.')
param purgeProtection bool = false
@description('Reachable only through a private endpoint when true; the deployment still writes the secrets (through Azure Resource Manager, not the vault\'s network endpoint).')
param privateNetworking bool = false
@description('Log Analytics workspace the vault\'s audit events (every secret read, by whom) go to.')
param logAnalyticsWorkspaceId string

// Key Vault Secrets User: read secret values, nothing else; the vault holds only this app's secrets.
var keyVaultSecretsUser = '4633458b-17de-408a-b874-0445c86b69e6' // Key Vault Secrets User

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    // Fixed when the vault is created; with purge protection on, the vault's name stays taken this long after a delete.
    softDeleteRetentionInDays: 7
    enablePurgeProtection: purgeProtection ? true : null
    // Without private networking the platform resolves Key Vault references from the app's shared, changing outbound
    // addresses, so the vault's firewall cannot name them: it stays open and RBAC (one reader, the app) is the gate.
    publicNetworkAccess: privateNetworking ? 'Disabled' : 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: privateNetworking ? 'Deny' : 'Allow'
    }
  }
}

// Only the secrets given (main.bicep names them): the vault is deployed when any is.
resource secret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = [for name in secretNames: {
  parent: vault
  name: name
  properties: {
    value: secrets[name]
    // Bearer tokens, one or several comma-separated; no expiry: a reference to an expired secret stops resolving,
    // so rotation is by hand (docs/deployment.md, "Secrets that remain").
    contentType: 'text/plain'
  }
}]

// Key Vault Secrets User on the vault
resource keyVaultSecretsUserAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, principalId, keyVaultSecretsUser)
  scope: vault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUser)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: vault
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        categoryGroup: 'audit'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output name string = vault.name
output id string = vault.id
