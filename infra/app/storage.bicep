// The host's storage account: keyless (Entra ID only), holding the deployment package, the shared index cache and,
// with refreshOnPublish, the queue the docs account's Event Grid events arrive in.
param name string
param location string
param tags object = {}
@description('Blob container Flex Consumption deploys the app package from.')
param deploymentContainerName string
@description('Blob container of the shared index cache (Forge__Documentation__Cache__Container).')
param cacheContainerName string
@description('Storage queue for the index-written events (Forge__Documentation__Refresh__QueueName); empty: none.')
param queueName string = ''
@description('Reachable only through private endpoints when true.')
param privateNetworking bool = false

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
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
    publicNetworkAccess: privateNetworking ? 'Disabled' : 'Enabled'
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

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = if (!empty(queueName)) {
  parent: storage
  name: 'default'
}

// Created here so Event Grid has somewhere to deliver before the app first runs its queue trigger.
resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = if (!empty(queueName)) {
  parent: queueService
  name: queueName
}

output name string = storage.name
output id string = storage.id
output blobEndpoint string = storage.properties.primaryEndpoints.blob
