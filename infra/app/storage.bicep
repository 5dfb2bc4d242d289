// The host's storage account: keyless (Entra ID only), holding the deployment package, the shared index cache and,
// with refreshOnPublish, the queue the docs account's Event Grid events arrive in and the container undeliverable ones
// are dead-lettered to.
param name string
param location string
param tags object = {}
@description('Blob container Flex Consumption deploys the app package from.')
param deploymentContainerName string
@description('Blob container of the shared index cache (Forge__Documentation__Cache__Container).')
param cacheContainerName string
@description('Storage queue for the index-written events (Forge__Documentation__Refresh__QueueName); empty: none.')
param queueName string = ''
@description('With queueName: the blob container Event Grid dead-letters the events it could not deliver to.')
param deadLetterContainerName string = ''
@description('Reachable only through private endpoints when true (the firewall denies everything else).')
param privateNetworking bool = false
@description('With privateNetworking: keep the public endpoint, closed by the firewall (default Deny) except to trusted Azure services, so Event Grid can deliver to the queue and the dead-letter container as its system-assigned identity. Event Grid cannot deliver through a private endpoint.')
param trustedServicesOnly bool = false
@description('Zone-redundant storage (Standard_ZRS), what a zone-redundant Flex Consumption plan\'s host storage should be.')
param zoneRedundant bool = false
@description('Log Analytics workspace the blob and queue services\' resource logs go to.')
param logAnalyticsWorkspaceId string

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: zoneRedundant ? 'Standard_ZRS' : 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    dnsEndpointType: 'Standard'
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    // Without private networking the app (whose outbound addresses are the platform's, shared and changing) reaches the
    // account over its public endpoint, Entra ID-only: the firewall stays open. With it, the public endpoint is off,
    // unless Event Grid must deliver here (trustedServicesOnly), which it does past the firewall as a trusted service.
    publicNetworkAccess: (privateNetworking && !trustedServicesOnly) ? 'Disabled' : 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: privateNetworking ? 'Deny' : 'Allow'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

// Created here so the app never needs the right to create containers.
resource cacheContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: cacheContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource deadLetterContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = if (!empty(queueName)) {
  parent: blobService
  name: deadLetterContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = if (!empty(queueName)) {
  parent: storage
  name: 'default'
}

// Created here so Event Grid has somewhere to deliver before the app first runs its queue trigger.
resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = if (!empty(queueName)) {
  parent: queueService
  name: queueName
}

// Where the queue trigger moves a message that failed five times (the Functions host creates it too): declared so an
// operator's read access can name it before the first message lands there.
resource poisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = if (!empty(queueName)) {
  parent: queueService
  name: '${queueName}-poison'
}

// Reads, writes and deletes of blobs and queue messages (StorageBlobLogs, StorageQueueLogs): who touched the cache,
// and the poison queue's arrivals, which an alert watches (app/alerts.bicep).
resource blobDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: blobService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        categoryGroup: 'allLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

resource queueDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = if (!empty(queueName)) {
  name: 'to-log-analytics'
  scope: queueService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        categoryGroup: 'allLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

output name string = storage.name
output id string = storage.id
output blobEndpoint string = storage.properties.primaryEndpoints.blob
