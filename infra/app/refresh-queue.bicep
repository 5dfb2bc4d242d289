// The refresh queue's own storage account (refreshOnPublish): the queue the docs account's Event Grid topic delivers
// index writes to, the poison queue the queue trigger gives up into, and the container undeliverable events are
// dead-lettered to. Apart from the host storage because Event Grid delivers to a storage queue over its public endpoint
// only (past a firewall as a trusted service, never through a private endpoint): this account, which holds nothing but
// those events, is the one that admits it, and the host storage (the deployment package, the index cache, the host's
// keys) keeps its public endpoint off under private networking.
param name string
param location string
param tags object = {}
@description('Storage queue for the index-written events (Forge__Documentation__Refresh__QueueName).')
param queueName string
@description('The blob container Event Grid dead-letters the events it could not deliver to.')
param deadLetterContainerName string
@description('With private networking: the firewall denies everything but trusted Azure services (Event Grid as the topic\'s system-assigned identity) and this account\'s private endpoints.')
param privateNetworking bool = false
@description('Zone-redundant storage (Standard_ZRS), as the zone-redundant plan\'s host storage is.')
param zoneRedundant bool = false
@description('Log Analytics workspace the queue and blob services\' resource logs go to.')
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
    // Always on: Event Grid has no other way in. With private networking the firewall closes it to all but trusted
    // services (Microsoft Learn, Event Grid, "Storage queue as an event handler": the system topic's system-assigned
    // identity, "Allow Azure services on the trusted service list"); the app reads the queue through a private
    // endpoint. Without it the app reaches the account from Flex Consumption's shared outbound addresses, Entra ID only.
    publicNetworkAccess: 'Enabled'
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

resource deadLetterContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deadLetterContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

// Created here so Event Grid has somewhere to deliver before the app first runs its queue trigger.
resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: queueName
}

// Where the queue trigger moves a message that failed five times (the Functions host creates it too): declared so an
// operator's read access can name it before the first message lands there.
resource poisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: '${queueName}-poison'
}

// Queue messages put, read and deleted (StorageQueueLogs: the poison queue's arrivals, which an alert watches in
// app/alerts.bicep) and the dead letters written and read (StorageBlobLogs).
resource queueDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
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

output name string = storage.name
output id string = storage.id
output queueEndpoint string = storage.properties.primaryEndpoints.queue
